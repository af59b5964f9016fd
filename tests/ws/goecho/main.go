// A WebSocket echo server on gorilla/websocket, for brink's tests and benchmarks: it
// echoes every message on 127.0.0.1, answers pings (gorilla's default handler), and prints
// its port. `-close CODE` closes each connection with CODE after its first message.
package main

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"

	"github.com/gorilla/websocket"
)

func main() {
	port := flag.Int("port", 0, "port on 127.0.0.1 (0: any free one)")
	closeWith := flag.Int("close", 0, "close each connection with this code after its first message")
	flag.Parse()
	up := websocket.Upgrader{ReadBufferSize: 4096, WriteBufferSize: 4096}
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		for {
			kind, msg, err := c.ReadMessage()
			if err != nil {
				return
			}
			if err := c.WriteMessage(kind, msg); err != nil {
				return
			}
			if *closeWith != 0 {
				m := websocket.FormatCloseMessage(*closeWith, "bye")
				_ = c.WriteMessage(websocket.CloseMessage, m)
				for {
					if _, _, err := c.ReadMessage(); err != nil {
						return
					}
				}
			}
		}
	})
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", *port))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(l.Addr().(*net.TCPAddr).Port)
	_ = http.Serve(l, nil)
}
