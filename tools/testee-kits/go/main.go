// The harness loop of the Go testee kit: speaks the frameproof testee protocol (spec/testee.md,
// harness versions 1 and 2) on stdin/stdout and hands `standard` decode/encode requests to the
// codec in codec/standard.go. You should not need to change this file to test your own codec:
// replace the code in codec/ (marked "YOUR CODEC HERE") instead.
package main

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"os"

	"google.golang.org/protobuf/proto"

	"example.com/frameproof-testee/codec"
	pb "example.com/frameproof-testee/testeepb"
)

const (
	name    = "frameproof-go-kit" // YOUR NAME HERE: shown in the runner's report
	version = "0.1.0"
)

func main() {
	in := bufio.NewReaderSize(os.Stdin, 1<<16)
	out := bufio.NewWriterSize(os.Stdout, 1<<16)
	for {
		req, err := readRequest(in)
		if err == io.EOF {
			return // EOF on stdin: exit 0
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "testee: reading request:", err)
			os.Exit(1)
		}
		if err := writeResponse(out, handle(req)); err != nil {
			fmt.Fprintln(os.Stderr, "testee: writing response:", err)
			os.Exit(1)
		}
	}
}

// readRequest reads one u32-LE-length-prefixed TesteeRequest.
func readRequest(r io.Reader) (*pb.TesteeRequest, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err // io.EOF: a clean end between requests
	}
	body := make([]byte, binary.LittleEndian.Uint32(hdr[:]))
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, fmt.Errorf("request body: %w", err)
	}
	req := &pb.TesteeRequest{}
	if err := proto.Unmarshal(body, req); err != nil {
		return nil, err
	}
	return req, nil
}

// writeResponse writes one u32-LE-length-prefixed TesteeResponse and flushes stdout.
func writeResponse(w *bufio.Writer, resp *pb.TesteeResponse) error {
	body, err := proto.Marshal(resp)
	if err != nil {
		return err
	}
	var hdr [4]byte
	binary.LittleEndian.PutUint32(hdr[:], uint32(len(body)))
	if _, err := w.Write(hdr[:]); err != nil {
		return err
	}
	if _, err := w.Write(body); err != nil {
		return err
	}
	return w.Flush()
}

func skipped(reason string) *pb.TesteeResponse {
	return &pb.TesteeResponse{Result: &pb.TesteeResponse_Skipped{Skipped: reason}}
}

func handle(req *pb.TesteeRequest) *pb.TesteeResponse {
	switch r := req.Request.(type) {
	case *pb.TesteeRequest_Hello:
		v := uint32(1)
		if r.Hello.GetMaxHarnessVersion() >= 2 {
			v = 2
		}
		return &pb.TesteeResponse{Result: &pb.TesteeResponse_Hello{Hello: &pb.HelloResponse{
			HarnessVersion: v,
			Name:           name,
			Version:        version,
			Protocols:      []string{"standard"},
			Features:       []string{"decode", "encode"},
		}}}
	case *pb.TesteeRequest_Decode:
		if why := unsupported(r.Decode.GetCodec()); why != "" {
			return skipped(why)
		}
		return decode(r.Decode)
	case *pb.TesteeRequest_Encode:
		if why := unsupported(r.Encode.GetCodec()); why != "" {
			return skipped(why)
		}
		return encode(r.Encode)
	case *pb.TesteeRequest_Match:
		return skipped("match is not implemented by this testee")
	case *pb.TesteeRequest_Serve:
		return skipped("serve is not implemented by this testee")
	default:
		return skipped("unknown request")
	}
}

// unsupported says why a codec configuration is not handled ("" when it is).
func unsupported(c *pb.Codec) string {
	if c.GetProtocol() != "standard" {
		return fmt.Sprintf("protocol %q is not implemented by this testee", c.GetProtocol())
	}
	if c.GetParams() != nil {
		return "protocol parameters are not supported for standard"
	}
	return ""
}

func protocolError(e *codec.Error) *pb.ProtocolError {
	return &pb.ProtocolError{Requirement: e.Requirement, Offset: e.Offset, Message: e.Message}
}

// decode feeds the chunks exactly as split to a fresh decoder, then ends the stream.
func decode(req *pb.DecodeRequest) *pb.TesteeResponse {
	out := &pb.DecodeResponse{}
	add := func(frames []codec.Frame) {
		for _, f := range frames {
			out.Frames = append(out.Frames, &pb.Frame{Flag: uint32(f.Flag), Sequence: uint32(f.Sequence), Payload: f.Payload})
		}
	}
	dec := codec.NewDecoder(req.GetCodec().GetLimits().GetMaxPayload())
	var err *codec.Error
	for _, chunk := range req.GetChunks() {
		var frames []codec.Frame
		frames, err = dec.Feed(chunk)
		add(frames)
		if err != nil {
			break // the first error ends the stream (STD-STR-4)
		}
	}
	if err == nil {
		err = dec.Finish()
	}
	if err != nil {
		out.Error = protocolError(err)
	}
	return &pb.TesteeResponse{Result: &pb.TesteeResponse_Decode{Decode: out}}
}

func encode(req *pb.EncodeRequest) *pb.TesteeResponse {
	f := req.GetFrame()
	if f.GetFlag() > 0xFF || f.GetSequence() > 0xFF {
		return skipped("flag and sequence must be bytes")
	}
	data, err := codec.Encode(codec.Frame{Flag: byte(f.GetFlag()), Sequence: byte(f.GetSequence()), Payload: f.GetPayload()},
		req.GetCodec().GetLimits().GetMaxPayload())
	res := &pb.EncodeResponse{}
	if err != nil {
		res.Result = &pb.EncodeResponse_Error{Error: protocolError(err)}
	} else {
		res.Result = &pb.EncodeResponse_Encoded{Encoded: data}
	}
	return &pb.TesteeResponse{Result: &pb.TesteeResponse_Encode{Encode: res}}
}
