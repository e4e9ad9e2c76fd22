package main

import (
	"io"
	"net"
	"sync"
	"time"
)

// memConn is the in-memory net.Conn the library's server Conn runs over in `serve`: the testee
// feeds it input and, after each feed, waits until the library is blocked reading again with
// nothing left to read (so everything it wrote in answer is in `out`), or its handler has returned.
type memConn struct {
	mu      sync.Mutex
	cond    *sync.Cond
	in      []byte
	out     []byte
	eof     bool // the peer's half-close: Read returns io.EOF once `in` is empty
	closed  bool // closed by the library's side
	waiting bool // the reader is blocked in Read with `in` empty
	done    bool // the handler goroutine returned
}

func newMemConn() *memConn {
	m := &memConn{}
	m.cond = sync.NewCond(&m.mu)
	return m
}

func (m *memConn) Read(p []byte) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for len(m.in) == 0 && !m.eof && !m.closed {
		m.waiting = true
		m.cond.Broadcast()
		m.cond.Wait()
	}
	m.waiting = false
	if m.closed {
		return 0, net.ErrClosed
	}
	if len(m.in) == 0 {
		return 0, io.EOF
	}
	n := copy(p, m.in)
	m.in = m.in[n:]
	return n, nil
}

func (m *memConn) Write(p []byte) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return 0, net.ErrClosed
	}
	m.out = append(m.out, p...)
	return len(p), nil
}

func (m *memConn) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	m.cond.Broadcast()
	return nil
}

// finished marks the handler goroutine as returned.
func (m *memConn) finished() {
	m.mu.Lock()
	m.done = true
	m.cond.Broadcast()
	m.mu.Unlock()
}

// feed appends input (or, with eof, ends it) and waits until the library has taken all of it and
// is blocked reading again, or its handler has returned. It returns what the library wrote
// meanwhile, and whether the connection is closed.
func (m *memConn) feed(data []byte, eof bool) ([]byte, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.in = append(m.in, data...)
	m.eof = m.eof || eof
	m.waiting = false
	m.cond.Broadcast()
	for !m.done && !(m.waiting && len(m.in) == 0) {
		m.cond.Wait()
	}
	out := m.out
	m.out = nil
	return out, m.done || m.closed
}

// take returns (and forgets) what was written so far.
func (m *memConn) take() []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := m.out
	m.out = nil
	return out
}

type memAddr struct{}

func (memAddr) Network() string { return "memory" }
func (memAddr) String() string  { return "memory" }

func (m *memConn) LocalAddr() net.Addr                { return memAddr{} }
func (m *memConn) RemoteAddr() net.Addr               { return memAddr{} }
func (m *memConn) SetDeadline(t time.Time) error      { return nil }
func (m *memConn) SetReadDeadline(t time.Time) error  { return nil }
func (m *memConn) SetWriteDeadline(t time.Time) error { return nil }
