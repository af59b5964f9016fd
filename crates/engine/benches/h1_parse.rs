//! Hot-path micro-benchmarks: parsing a typical response head, skipping a chunked body,
//! computing an open-model intended time, and rendering a templated request (the per-request
//! cost a plan with placeholders adds). `cargo bench -p engine`.

use criterion::{criterion_group, criterion_main, Criterion};
use engine::h1::parse::{parse_head, Chunked};
use engine::Curve;
use std::hint::black_box;
use std::time::Duration;
use workload::template::{Names, Template};
use workload::{Request, Vu, Workload};

const NGINX: &[u8] = b"HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nDate: Sun, 22 Nov 2026 00:00:00 GMT\r\n\
Content-Type: application/octet-stream\r\nContent-Length: 13\r\nConnection: keep-alive\r\n\r\nhello, world\n";

fn benches(c: &mut Criterion) {
    c.bench_function("parse_head/nginx", |b| {
        b.iter(|| parse_head(black_box(NGINX), false))
    });
    let body: Vec<u8> = (0..16)
        .flat_map(|_| {
            b"400\r\n"
                .iter()
                .copied()
                .chain([b'x'; 1024])
                .chain(*b"\r\n")
        })
        .chain(*b"0\r\n\r\n")
        .collect();
    c.bench_function("chunked/16x1KiB", |b| {
        b.iter(|| {
            let mut d = Chunked::default();
            d.feed(black_box(&body))
        })
    });
    let ramp = Curve::stages(&[
        (Duration::from_secs(60), 1000.0),
        (Duration::from_secs(600), 1000.0),
    ]);
    let mut i = 0u64;
    c.bench_function("curve/time_of", |b| {
        b.iter(|| {
            i = (i + 7919) % 600_000;
            ramp.time_of(black_box(i))
        })
    });
}

fn templates(c: &mut Criterion) {
    let names = Names {
        data: &[],
        vars: &[],
        env: &|_| None,
    };
    let t = |s: &str| Template::compile(s, &names).expect("bench template compiles");
    let mut step = Request::fixed("t", "GET", "/", &[], b"");
    step.path = t("/?id={{seq}}&page={{rand_int 1 1000}}");
    step.headers = vec![
        ("X-Request-Id".into(), t("{{uuid}}")),
        ("X-User".into(), t("user-{{vu}}")),
    ];
    let w = Workload::single(step);
    let mut vu = Vu::new(&w, 3);
    c.bench_function("template/render_h1", |b| {
        b.iter(|| {
            vu.next(&w);
            let _ = black_box(vu.render_h1(black_box(&w), "127.0.0.1:8080", true));
            vu.buf.len()
        })
    });
}

criterion_group!(hot_path, benches, templates);
criterion_main!(hot_path);
