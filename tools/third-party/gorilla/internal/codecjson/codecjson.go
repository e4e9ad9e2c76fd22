// Package codecjson reads the `--codec JSON` / `--protocol NAME` option of the common program
// contract (reference-impls/README.md, "The profile syntax") for the websocket protocol: the only
// protocol these wrappers serve. Unknown keys are a usage error, as the contract says.
package codecjson

import (
	"bytes"
	"encoding/json"
	"fmt"
)

const (
	DefaultMaxPayload = 10 << 20  // spec/websocket.md §10: limits.max_payload default
	DefaultMaxMessage = 100 << 20 // websocket.max_message default
)

type Websocket struct {
	MaxPayload uint64
	MaxMessage uint64
}

type limits struct {
	MaxPayload uint64 `json:"max_payload"`
}

type wsParams struct {
	Role       string `json:"role"`
	MaxMessage uint64 `json:"max_message"`
}

type codec struct {
	Protocol  string    `json:"protocol"`
	Limits    *limits   `json:"limits"`
	Websocket *wsParams `json:"websocket"`
}

// Parse reads a codec JSON object; only protocol "websocket" (server role) is accepted.
func Parse(text string) (Websocket, error) {
	var c codec
	dec := json.NewDecoder(bytes.NewReader([]byte(text)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return Websocket{}, fmt.Errorf("--codec: %v", err)
	}
	if c.Protocol != "websocket" {
		return Websocket{}, fmt.Errorf("--codec: protocol %q is not served by this wrapper (websocket only)", c.Protocol)
	}
	w := Websocket{MaxPayload: DefaultMaxPayload, MaxMessage: DefaultMaxMessage}
	if c.Limits != nil && c.Limits.MaxPayload != 0 {
		w.MaxPayload = c.Limits.MaxPayload
	}
	if c.Websocket != nil {
		if c.Websocket.Role != "" && c.Websocket.Role != "server" {
			return Websocket{}, fmt.Errorf("--codec: role %q: this is a server", c.Websocket.Role)
		}
		if c.Websocket.MaxMessage != 0 {
			w.MaxMessage = c.Websocket.MaxMessage
		}
	}
	return w, nil
}

// ReadLimit is the one limit the library has (a message limit, checked from each frame's header
// against the message so far): the smaller of the spec's frame and message limits.
func (w Websocket) ReadLimit() int64 {
	if w.MaxPayload < w.MaxMessage {
		return int64(w.MaxPayload)
	}
	return int64(w.MaxMessage)
}
