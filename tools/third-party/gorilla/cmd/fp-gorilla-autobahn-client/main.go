// fp-gorilla-autobahn-client: the Autobahn testsuite's client protocol (reference-impls/README.md,
// "fp-autobahn-client") on gorilla/websocket's Dialer, for `frameproof autobahn --client-cmd`:
//
//	fp-gorilla-autobahn-client --connect HOST:PORT --agent NAME [--cases all|N]
//
// GET /getCaseCount (one text message: the count), then for each case GET /runCase?case=I&agent=NAME,
// echoing every text and binary message back with its opcode (ReadMessage/WriteMessage) until the
// connection ends, then GET /updateReports?agent=NAME. No compression, read limit 64 MiB + 1 KiB (the
// contract: no message size limit below 64 MiB). Exit 0 when every case ran (the verdicts are Autobahn's).
package main

import (
	"fmt"
	"net/url"
	"os"
	"strconv"
	"time"

	"github.com/gorilla/websocket"
)

const usage = "usage: fp-gorilla-autobahn-client --connect HOST:PORT --agent NAME [--cases all|N]"

func main() {
	var connect, agent, cases = "", "", "all"
	args := os.Args[1:]
	for i := 0; i < len(args); i++ {
		val := func() string {
			if i+1 >= len(args) {
				fmt.Fprintf(os.Stderr, "usage error: %s needs a value\n%s\n", args[i], usage)
				os.Exit(2)
			}
			i++
			return args[i]
		}
		switch args[i] {
		case "--help", "-h":
			fmt.Println(usage)
			return
		case "--connect":
			connect = val()
		case "--agent":
			agent = val()
		case "--cases":
			cases = val()
		default:
			fmt.Fprintf(os.Stderr, "usage error: unknown flag %s\n%s\n", args[i], usage)
			os.Exit(2)
		}
	}
	if connect == "" || agent == "" {
		fmt.Fprintf(os.Stderr, "usage error: --connect and --agent are required\n%s\n", usage)
		os.Exit(2)
	}
	base := "ws://" + connect
	dialer := websocket.Dialer{HandshakeTimeout: 10 * time.Second}

	c, _, err := dialer.Dial(base+"/getCaseCount", nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fp-gorilla-autobahn-client: getCaseCount:", err)
		os.Exit(1)
	}
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	_, msg, err := c.ReadMessage()
	c.Close()
	if err != nil {
		fmt.Fprintln(os.Stderr, "fp-gorilla-autobahn-client: getCaseCount:", err)
		os.Exit(1)
	}
	count, err := strconv.Atoi(string(msg))
	if err != nil {
		fmt.Fprintf(os.Stderr, "fp-gorilla-autobahn-client: case count %q: %v\n", msg, err)
		os.Exit(1)
	}
	if cases != "all" {
		n, err := strconv.Atoi(cases)
		if err != nil || n < 0 {
			fmt.Fprintf(os.Stderr, "usage error: --cases %s: all or a number\n%s\n", cases, usage)
			os.Exit(2)
		}
		if n < count {
			count = n
		}
	}
	q := url.QueryEscape(agent)
	failed := 0
	for i := 1; i <= count; i++ {
		c, _, err := dialer.Dial(fmt.Sprintf("%s/runCase?case=%d&agent=%s", base, i, q), nil)
		if err != nil {
			fmt.Fprintf(os.Stderr, "fp-gorilla-autobahn-client: case %d: %v\n", i, err)
			failed++
			continue
		}
		c.SetReadLimit(64<<20 + 1024)
		for {
			c.SetReadDeadline(time.Now().Add(120 * time.Second))
			mt, m, err := c.ReadMessage()
			if err != nil {
				break
			}
			if err := c.WriteMessage(mt, m); err != nil {
				break
			}
		}
		c.Close()
	}
	c, _, err = dialer.Dial(base+"/updateReports?agent="+q, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fp-gorilla-autobahn-client: updateReports:", err)
		os.Exit(1)
	}
	c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""),
		time.Now().Add(5*time.Second))
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		if _, _, err := c.ReadMessage(); err != nil {
			break
		}
	}
	c.Close()
	if failed > 0 {
		fmt.Fprintf(os.Stderr, "fp-gorilla-autobahn-client: %d of %d cases could not connect\n", failed, count)
		os.Exit(1)
	}
}
