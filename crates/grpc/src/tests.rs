//! Compiling real `.proto` files, finding methods, encoding JSON: the bytes on the wire are
//! checked against the protobuf encoding written out by hand.

use super::*;
use workload::Codec;

/// The framed request of `call` with the message `json`.
fn encoded(src: &Sources, call: &str, json: &str) -> Result<(Call, Vec<u8>), String> {
    let c = prepare(src, call)?;
    let frame = c.codec.encode_text(json)?;
    Ok((c, frame))
}

fn greeter() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/grpc/greeter.proto")
}

fn protos(files: &[PathBuf]) -> Sources {
    Sources {
        protos: files.to_vec(),
        ..Sources::default()
    }
}

#[test]
fn a_descriptor_set_serves_as_well_as_the_proto_and_lists_its_methods() {
    let compiled = compile(&[greeter()], &[]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let set = dir.path().join("greeter.protoset");
    std::fs::write(&set, compiled.encode_to_vec()).unwrap();
    let from_set = Sources {
        protosets: vec![set],
        ..Sources::default()
    };
    let a = encoded(&from_set, "helloworld.Greeter/SayHello", r#"{"name":"a"}"#).unwrap();
    let b = encoded(
        &protos(&[greeter()]),
        "helloworld.Greeter/SayHello",
        r#"{"name":"a"}"#,
    )
    .unwrap();
    assert_eq!(a.1, b.1);
    let listed = list(&pool(&from_set).unwrap());
    assert_eq!(
        listed,
        "helloworld.Greeter/SayHello  (helloworld.HelloRequest -> helloworld.HelloReply, unary)\n\
         helloworld.Greeter/SayHelloStream  (helloworld.HelloRequest -> helloworld.HelloReply, server streaming)\n\
         helloworld.Greeter/SayHellos  (helloworld.HelloRequest -> helloworld.HelloReply, client streaming)\n\
         helloworld.Greeter/Chat  (helloworld.HelloRequest -> helloworld.HelloReply, bidi streaming)\n"
    );
    let junk = dir.path().join("junk.protoset");
    std::fs::write(&junk, b"\xff\xff not protobuf").unwrap();
    let e = pool(&Sources {
        protosets: vec![junk],
        ..Sources::default()
    })
    .unwrap_err();
    assert!(e.contains("not a descriptor set"), "{e}");
    assert!(pool(&Sources::default())
        .unwrap_err()
        .contains("--protoset"));
}

#[test]
fn a_unary_call_is_framed_protobuf() {
    let (call, frame) = encoded(
        &protos(&[greeter()]),
        "helloworld.Greeter/SayHello",
        r#"{"name":"a","times":2,"at":"1970-01-01T00:00:01Z"}"#,
    )
    .unwrap();
    assert_eq!(call.path, "/helloworld.Greeter/SayHello");
    // field 1 (string "a"), field 2 (varint 2), field 3 (Timestamp{seconds: 1}).
    let message = [0x0a, 0x01, b'a', 0x10, 0x02, 0x1a, 0x02, 0x08, 0x01];
    let mut want = vec![0, 0, 0, 0, message.len() as u8];
    want.extend_from_slice(&message);
    assert_eq!(frame, want);
    // The same document as a JSON value encodes the same; a string for an int32 is accepted
    // (the proto3 JSON mapping allows it, so a `{{seq}}` can fill a number field).
    let v = serde_json::json!({"name": "a", "times": "2", "at": "1970-01-01T00:00:01Z"});
    assert_eq!(call.codec.encode(&v).unwrap(), want);
    // The dotted form names the same method.
    let (dotted, empty) =
        encoded(&protos(&[greeter()]), "helloworld.Greeter.SayHello", "{}").unwrap();
    assert_eq!(dotted.path, call.path);
    assert_eq!(empty, [0, 0, 0, 0, 0]);
}

#[test]
fn responses_decode_to_json_for_extraction() {
    let call = prepare(&protos(&[greeter()]), "helloworld.Greeter/SayHello").unwrap();
    let reply = [0, 0, 0, 0, 4, 0x0a, 0x02, b'h', b'i'];
    assert_eq!(
        call.codec.decode(&reply).unwrap(),
        serde_json::json!({"message": "hi"})
    );
    let two: Vec<u8> = reply.iter().chain(reply.iter()).copied().collect();
    assert_eq!(
        call.codec.decode(&two).unwrap(),
        serde_json::json!([{"message": "hi"}, {"message": "hi"}])
    );
    assert!(call
        .codec
        .decode(&reply[..7])
        .unwrap_err()
        .contains("cut short"));
    assert!(call
        .codec
        .decode(&[1, 0, 0, 0, 0])
        .unwrap_err()
        .contains("compressed"));
    assert!(call.codec.decode(b"").unwrap_err().contains("no message"));
    let bad = call
        .codec
        .encode(&serde_json::json!({"times": "many"}))
        .unwrap_err();
    assert!(bad.contains("helloworld.HelloRequest"), "{bad}");
}

#[test]
fn bad_input_says_what_exists_and_where() {
    let err = |call: &str, json: &str| encoded(&protos(&[greeter()]), call, json).unwrap_err();
    let e = err("helloworld.Greter/SayHello", "{}");
    assert!(
        e.contains("no service helloworld.Greter (services: helloworld.Greeter)"),
        "{e}"
    );
    let e = err("helloworld.Greeter/SayHi", "{}");
    assert!(e.contains("methods: SayHello, SayHelloStream"), "{e}");
    let streaming = prepare(&protos(&[greeter()]), "helloworld.Greeter/SayHelloStream").unwrap();
    assert!(streaming.server_streaming && !streaming.client_streaming);
    let e = err("helloworld.Greeter/SayHello", r#"{"times":"many"}"#);
    assert!(e.contains("helloworld.HelloRequest"), "{e}");
    let e = err("helloworld.Greeter/SayHello", r#"{"nmae":"x"}"#);
    assert!(e.contains("nmae"), "{e}");
    let e = err("Greeter", "{}");
    assert!(e.contains("expected package.Service/Method"), "{e}");

    let dir = tempfile::tempdir().unwrap();
    let broken = dir.path().join("broken.proto");
    std::fs::write(
        &broken,
        "syntax = \"proto3\";\nmessage A {\n  string x = ;\n}\n",
    )
    .unwrap();
    let e = compile(&[broken], &[]).unwrap_err();
    assert!(e.contains("broken.proto:3:"), "{e}");
    assert!(!e.contains('\n'));
    let e = compile(&[dir.path().join("missing.proto")], &[]).unwrap_err();
    assert!(e.contains("no such file"), "{e}");
    let e = pool(&Sources::default()).unwrap_err();
    assert!(e.contains("--proto"), "{e}");
}
