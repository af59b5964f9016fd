# A WebSocket echo server on Python's websockets (PyPI), for the WebSocket benchmarks: echoes
# every message, holds as many connections as its file limit allows, never pings.
#   python3 bench/ws/echo.py PORT
import asyncio, sys
from websockets.asyncio.server import serve
async def echo(ws):
    async for m in ws:
        await ws.send(m)
async def main():
    async with serve(echo, "127.0.0.1", int(sys.argv[1]), ping_interval=None, max_queue=4, backlog=4096) as s:
        await asyncio.get_running_loop().create_future()
asyncio.run(main())
