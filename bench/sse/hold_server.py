"""A server of long-lived event streams for bench/sse_hold.sh: every request to any path is
answered `200 text/event-stream` (chunked) and then one small event per second, for as long
as the client stays, on 127.0.0.1 only. One asyncio loop holds ten thousand streams."""

import asyncio
import sys


async def serve(reader, writer):
    try:
        while True:
            line = await reader.readline()
            if not line:
                return
            if line in (b"\r\n", b"\n"):
                break
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            b"Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n"
        )
        n = 0
        while True:
            event = b'id: %d\ndata: {"n":%d}\n\n' % (n, n)
            writer.write(b"%x\r\n%s\r\n" % (len(event), event))
            await writer.drain()
            n += 1
            await asyncio.sleep(1)
    except (ConnectionError, asyncio.IncompleteReadError):
        pass
    finally:
        writer.close()


async def main(port):
    server = await asyncio.start_server(serve, "127.0.0.1", port, backlog=16384)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1])))
