// Package echo is the echo service both wrappers run on a gorilla *websocket.Conn: the network
// server (cmd/fp-gorilla-server) and the testee's offline serve (cmd/fp-gorilla-testee), so that
// the codec suite's serve tests and the network suite see the same code.
package echo

import "github.com/gorilla/websocket"

// Counters of one connection.
type Counters struct {
	Messages, Bytes int64
}

// Serve echoes every text and binary message with its opcode, as one frame, until ReadMessage
// fails; it returns that error (a *websocket.CloseError after a close handshake or an EOF, or the
// error of a protocol violation, which gorilla has already answered with its close frame).
// Pings, pongs and the close handshake are gorilla's default handlers. readLimit: Conn.SetReadLimit.
func Serve(c *websocket.Conn, readLimit int64, count func(Counters)) error {
	c.SetReadLimit(readLimit)
	for {
		mt, msg, err := c.ReadMessage()
		if err != nil {
			return err
		}
		if count != nil {
			count(Counters{Messages: 1, Bytes: int64(len(msg))})
		}
		if err := c.WriteMessage(mt, msg); err != nil {
			return err
		}
	}
}
