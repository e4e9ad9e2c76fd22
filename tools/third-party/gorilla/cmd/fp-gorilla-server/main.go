// fp-gorilla-server: a websocket echo server on github.com/gorilla/websocket, following the echo-server
// contract of reference-impls/README.md (websocket section) as far as the library allows:
//
//	fp-gorilla-server (--protocol websocket | --codec JSON) --listen HOST:PORT
//
// The handshake is gorilla's Upgrader (subprotocol "frameproof.echo" selected when offered, no
// compression, any origin); every text and binary message is echoed with its opcode as one frame
// (internal/echo: Conn.ReadMessage / Conn.WriteMessage); pings, pongs and the close handshake are gorilla's
// default handlers; protocol errors are closed by gorilla itself. Nothing is checked here that
// gorilla does not check: the wrapper shows the library's behaviour. SIGTERM/SIGINT: stop
// accepting, close every connection, print {"connections","frames","bytes","protocol_errors"},
// exit 0.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gorilla/websocket"

	"frameproof.local/third-party/gorilla/internal/codecjson"
	"frameproof.local/third-party/gorilla/internal/echo"
)

const usage = "usage: fp-gorilla-server (--protocol websocket | --codec JSON) --listen HOST:PORT"

func usageError(msg string) {
	fmt.Fprintf(os.Stderr, "usage error: %s\n%s\n", msg, usage)
	os.Exit(2)
}

type stats struct {
	connections, frames, bytes, protocolErrors atomic.Int64
}

func main() {
	var listen, codecText string
	args := os.Args[1:]
	for i := 0; i < len(args); i++ {
		a := args[i]
		val := func() string {
			if i+1 >= len(args) {
				usageError(a + " needs a value")
			}
			i++
			return args[i]
		}
		switch a {
		case "--help", "-h":
			fmt.Println(usage)
			return
		case "--listen":
			listen = val()
		case "--protocol":
			if codecText != "" {
				usageError("give --protocol or --codec, not both")
			}
			codecText = fmt.Sprintf("{\"protocol\": %q}", val())
		case "--codec":
			if codecText != "" {
				usageError("give --protocol or --codec, not both")
			}
			codecText = val()
		default:
			usageError("unknown or unsupported flag " + a)
		}
	}
	if listen == "" || codecText == "" {
		usageError("--listen and --protocol/--codec are required")
	}
	cfg, err := codecjson.Parse(codecText)
	if err != nil {
		usageError(err.Error())
	}

	ln, err := net.Listen("tcp", listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fp-gorilla-server:", err)
		os.Exit(1)
	}
	var st stats
	var mu sync.Mutex
	live := map[*websocket.Conn]struct{}{}
	var wg sync.WaitGroup

	upgrader := websocket.Upgrader{
		Subprotocols: []string{"frameproof.echo"},
		CheckOrigin:  func(*http.Request) bool { return true },
	}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := upgrader.Upgrade(w, r, nil) // answers a bad request itself (4xx)
		if err != nil {
			return
		}
		mu.Lock()
		live[c] = struct{}{}
		mu.Unlock()
		wg.Add(1)
		st.connections.Add(1)
		defer func() {
			c.Close()
			mu.Lock()
			delete(live, c)
			mu.Unlock()
			wg.Done()
		}()
		err = echo.Serve(c, cfg.ReadLimit(), func(n echo.Counters) {
			st.frames.Add(n.Messages)
			st.bytes.Add(n.Bytes)
		})
		var ce *websocket.CloseError
		if !errors.As(err, &ce) && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) &&
			!errors.Is(err, net.ErrClosed) {
			st.protocolErrors.Add(1)
		}
	})
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 30 * time.Second, MaxHeaderBytes: 64 << 10,
		ErrorLog: nil}
	fmt.Printf("LISTENING %s\n", ln.Addr().String())
	os.Stdout.Sync()

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case <-sigs:
	case err := <-done:
		fmt.Fprintln(os.Stderr, "fp-gorilla-server: serve:", err)
	}
	srv.Close() // the listener and every connection not hijacked
	mu.Lock()
	for c := range live {
		c.Close()
	}
	mu.Unlock()
	waited := make(chan struct{})
	go func() { wg.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(2 * time.Second):
	}
	out, _ := json.Marshal(map[string]int64{"connections": st.connections.Load(), "frames": st.frames.Load(),
		"bytes": st.bytes.Load(), "protocol_errors": st.protocolErrors.Load()})
	fmt.Println(string(out))
	os.Exit(0)
}
