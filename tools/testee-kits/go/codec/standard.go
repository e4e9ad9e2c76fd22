// Package codec is the part of the kit YOU REPLACE: a small streaming decoder and an encoder for
// the frameproof `standard` protocol (spec/standard.md). The harness (main.go) only calls
// NewDecoder, (*Decoder).Feed, (*Decoder).Finish and Encode; keep those four signatures, or adapt
// the handful of lines in main.go that call them, and put your own codec behind them.
//
// ======================== YOUR CODEC HERE ========================
package codec

import "encoding/binary"

// DefaultMaxPayload is the spec's default limit (STD-LIM-1, STD-LIM-2): 10 MiB.
const DefaultMaxPayload = 10 * 1024 * 1024

// Frame is one `standard` frame: the whole flag byte, the sequence byte and the payload.
type Frame struct {
	Flag     byte
	Sequence byte
	Payload  []byte
}

// Error is a classified protocol error: the requirement the input breaks and the stream offset
// where the offending frame starts (spec/standard.md §8a). Encoder errors have offset 0.
type Error struct {
	Requirement string
	Offset      uint64
	Message     string
}

func (e *Error) Error() string { return e.Requirement + ": " + e.Message }

// Decoder is a streaming decoder: feed it the bytes of one connection in any split.
type Decoder struct {
	max  uint64 // largest accepted payload
	buf  []byte // bytes received but not yet delivered (at most one frame, STD-LIM-3)
	base uint64 // stream offset of buf[0]
	err  *Error // set after the first error: the stream is dead (STD-STR-4)
}

// NewDecoder makes a decoder; maxPayload 0 means the default (10 MiB).
func NewDecoder(maxPayload uint64) *Decoder {
	if maxPayload == 0 {
		maxPayload = DefaultMaxPayload
	}
	return &Decoder{max: maxPayload}
}

// Feed adds one chunk and returns every frame it completed, in order (STD-STR-1, STD-STR-2).
// On a protocol error it returns the frames completed before the offending one and the error;
// the decoder then refuses all further input (STD-STR-4).
func (d *Decoder) Feed(chunk []byte) ([]Frame, *Error) {
	if d.err != nil {
		return nil, d.err
	}
	d.buf = append(d.buf, chunk...)
	var frames []Frame
	pos := 0 // start of the next frame in buf
	for {
		b := d.buf[pos:]
		if len(b) < 4 {
			break // header incomplete: wait (STD-STR-1)
		}
		flag, seq := b[0], b[1]
		n := uint64(binary.LittleEndian.Uint16(b[2:4])) // STD-HDR-1: u16 little-endian
		hlen := 4
		if n == 0xFFFF { // STD-LEN-2: extended length follows
			if len(b) < 8 {
				break
			}
			n = uint64(binary.LittleEndian.Uint32(b[4:8]))
			hlen = 8
			offset := d.base + uint64(pos)
			if n < 0xFFFF {
				return frames, d.fail("STD-LEN-3", offset, "non-canonical extended length")
			}
			if n >= 1<<31 {
				return frames, d.fail("STD-LEN-4", offset, "extended length has bit 31 set")
			}
		}
		if n > d.max { // STD-LIM-1: decided by the header alone, before any payload arrives
			return frames, d.fail("STD-LIM-1", d.base+uint64(pos), "payload above the limit")
		}
		if uint64(len(b)-hlen) < n {
			break // payload incomplete: wait
		}
		payload := make([]byte, n) // copy: buf is reused below
		copy(payload, b[hlen:hlen+int(n)])
		frames = append(frames, Frame{Flag: flag, Sequence: seq, Payload: payload})
		pos += hlen + int(n) // STD-STR-5: the next byte starts the next frame
	}
	if pos > 0 { // drop the delivered bytes, keep the unfinished frame
		d.buf = append(d.buf[:0], d.buf[pos:]...)
		d.base += uint64(pos)
	}
	return frames, nil
}

// Finish tells the decoder the stream has ended: a partial frame is an error (STD-STR-3).
func (d *Decoder) Finish() *Error {
	if d.err != nil {
		return d.err
	}
	if len(d.buf) > 0 {
		return d.fail("STD-STR-3", d.base, "stream ended inside a frame")
	}
	return nil
}

func (d *Decoder) fail(req string, offset uint64, msg string) *Error {
	d.err = &Error{Requirement: req, Offset: offset, Message: msg}
	d.buf = nil
	return d.err
}

// Encode writes one frame, or refuses it (STD-LEN-4, STD-LIM-2). maxPayload 0 means the default.
func Encode(f Frame, maxPayload uint64) ([]byte, *Error) {
	if maxPayload == 0 {
		maxPayload = DefaultMaxPayload
	}
	n := uint64(len(f.Payload))
	if n >= 1<<31 {
		return nil, &Error{Requirement: "STD-LEN-4", Message: "payload of 2^31 bytes or more"}
	}
	if n > maxPayload {
		return nil, &Error{Requirement: "STD-LIM-2", Message: "payload above the limit"}
	}
	var out []byte
	if n < 0xFFFF { // STD-LEN-1: short form
		out = make([]byte, 4, 4+n)
		binary.LittleEndian.PutUint16(out[2:4], uint16(n))
	} else { // STD-LEN-2: FF FF + u32 little-endian
		out = make([]byte, 8, 8+n)
		binary.LittleEndian.PutUint16(out[2:4], 0xFFFF)
		binary.LittleEndian.PutUint32(out[4:8], uint32(n))
	}
	out[0], out[1] = f.Flag, f.Sequence // STD-HDR-2..4: written verbatim
	return append(out, f.Payload...), nil
}

// ====================== END OF YOUR CODEC ========================
