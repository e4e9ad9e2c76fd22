using System;
using System.Buffers;
using System.Buffers.Binary;
using System.Collections.Generic;
using System.Runtime.InteropServices;

namespace Frameproof.Codec
{
    /// <summary>
    /// Streaming rpc decoder (spec/rpc.md §2, §3, §6, §11). Any split of the stream gives the same
    /// frames (RPC-STR-1/2). The header is judged once its 16 bytes are complete, in the order magic,
    /// version, type, control frame with a body, limit (RPC-HDR-2/3/4, RPC-BODY-5, RPC-LIM-1), so an
    /// oversized frame is rejected before any body byte is buffered (RPC-LIM-3); the body fields are
    /// judged once the whole body is present (RPC-BODY-1/2/3). A frame inside one fed chunk is
    /// delivered from the caller's span (no copy); a split body is accumulated in a pooled buffer that
    /// grows with the bytes received, never beyond the declared body. Errors carry the offset of the
    /// frame's first byte and stop the decoder (RPC-STR-4).
    /// </summary>
    public sealed class RpcDecoder : IDisposable
    {
        readonly long _max;
        readonly byte[] _hdr = new byte[RpcTypes.HeaderLength];
        int _hdrCount;
        byte[] _body;
        int _bodyCount, _need;
        bool _inBody;
        long _pos, _frameStart;
        bool _failed, _halted;
        ProtocolError _error;

        public RpcDecoder(long maxBody = 0)
        {
            _max = maxBody <= 0 ? RpcTypes.DefaultMaxBody : maxBody;
        }

        public bool Failed { get { return _failed; } }
        public ProtocolError Error { get { return _error; } }
        public long Position { get { return _pos; } }
        /// <summary>Bytes buffered for the frame in progress.</summary>
        public int BufferedBytes { get { return _hdrCount + _bodyCount; } }

        /// <summary>Memory held for the frame in progress (RPC-RES-1): header and body bytes so far, or
        /// the body buffer allocated, if more; at least 1 while a frame is unfinished, else 0.</summary>
        public long HeldBytes
        {
            get
            {
                if (_failed || _pos == _frameStart) return 0;
                long held = _inBody ? RpcTypes.HeaderLength + _bodyCount : _hdrCount;
                if (_inBody && _body != null && _body.Length > held) held = _body.Length;
                return Math.Max(held, 1);
            }
        }

        /// <summary>Feeds one chunk. Returns false once the decoder has failed or a handler stopped it.</summary>
        public unsafe bool Feed(ReadOnlySpan<byte> data, IRpcFrameHandler handler)
        {
            if (_failed || _halted) return false;
            int length = data.Length;
            if (length == 0) return true;
            // Pointers over the pinned chunk, not Span slices: on Mono each slice, index and Span passed
            // costs a few ns, more than the decoding of a small frame (see FrameDecoder.Feed).
            fixed (byte* start = &MemoryMarshal.GetReference(data))
            {
                byte* p = start, end = start + length;
                // Hot path: whole frames back to back at a frame boundary whose header passes every check
                // (and body fields, Deliver). Anything else, or any check failing, goes to FeedAny from the
                // frame's first byte, which decides as before.
                while (!_inBody && _hdrCount == 0)
                {
                    if (end - p < RpcTypes.HeaderLength) break;
                    if (p[0] != 0x47 || p[1] != 0x52 || p[2] != 0x50 || p[3] != 0x43 || p[4] != 1) break;
                    uint type = p[5];
                    uint n = (uint)(p[12] << 24 | p[13] << 16 | p[14] << 8 | p[15]);
                    // RpcTypes.IsKnown and IsControl, tested here: Mono calls them
                    if (type >= 32 || (RpcTypes.KnownTypes >> (int)type & 1) == 0 || n > _max
                        || (n != 0 && (RpcTypes.ControlTypes >> (int)type & 1) != 0)) break;
                    if (end - p - RpcTypes.HeaderLength < n) break;
                    if (!(type == RpcTypes.Request ? DeliverRequest(p, (int)n, handler) : Deliver(p, p + RpcTypes.HeaderLength, (int)n, handler, true)))
                        return _halted ? false : FeedAny(p, end, handler);
                    p += RpcTypes.HeaderLength + n;
                    if (p == end) return true;
                }
                return FeedAny(p, end, handler);
            }
        }

        /// <summary>The general decoding loop over the pinned bytes [p, end): any split, every check.</summary>
        unsafe bool FeedAny(byte* p, byte* end, IRpcFrameHandler handler)
        {
            while (!_failed && !_halted && p < end)
            {
                if (_inBody)
                {
                    int n = (int)Math.Min(_need - _bodyCount, end - p);
                    Ensure(_bodyCount + n);
                    fixed (byte* b = _body) ByteBuffers.Copy(b + _bodyCount, p, n);
                    _bodyCount += n;
                    _pos += n;
                    p += n;
                    if (_bodyCount == _need)
                    {
                        _inBody = false;
                        fixed (byte* h = _hdr) fixed (byte* b = _body) Deliver(h, b, _need, handler, false);
                        _hdrCount = 0;
                        _bodyCount = 0;
                        if (_body != null && _body.Length > 64 * 1024) Drop();
                    }
                    continue;
                }
                if (_hdrCount == 0 && end - p >= RpcTypes.HeaderLength)
                {
                    // The header is inside this chunk, often the whole frame too.
                    int n;
                    if (!Judge(p, out n)) return false;
                    if (end - p - RpcTypes.HeaderLength >= n)
                    {
                        _pos += RpcTypes.HeaderLength + n;
                        Deliver(p, p + RpcTypes.HeaderLength, n, handler, false);
                        p += RpcTypes.HeaderLength + n;
                        continue;
                    }
                    for (int i = 0; i < RpcTypes.HeaderLength; i++) _hdr[i] = p[i];
                    _hdrCount = RpcTypes.HeaderLength;
                    _pos += RpcTypes.HeaderLength;
                    p += RpcTypes.HeaderLength;
                    BeginBody(n);
                    continue;
                }
                // Slow path: the header is split across chunks.
                int k = (int)Math.Min(RpcTypes.HeaderLength - _hdrCount, end - p);
                for (int i = 0; i < k; i++) _hdr[_hdrCount + i] = p[i];
                _hdrCount += k;
                _pos += k;
                p += k;
                if (_hdrCount < RpcTypes.HeaderLength) continue;
                int len;
                bool ok;
                fixed (byte* h = _hdr) ok = Judge(h, out len);
                if (!ok) return false;
                if (len == 0)
                {
                    fixed (byte* h = _hdr) Deliver(h, null, 0, handler, false);
                    _hdrCount = 0;
                }
                else BeginBody(len);
            }
            return !_failed && !_halted;
        }

        /// <summary>End of stream: a frame left unfinished is truncated (RPC-STR-3). Returns false if
        /// the stream was rejected (now or before).</summary>
        public bool Finish()
        {
            if (_failed) return false;
            if (_pos > _frameStart && !_halted)
            {
                Fail("RPC-STR-3", "stream ended inside a frame (" + (_pos - _frameStart) + " bytes of it received)");
                return false;
            }
            Drop();
            return true;
        }

        /// <summary>True if the stream so far ends inside a frame.</summary>
        public bool InsideFrame { get { return _pos > _frameStart; } }

        public void Dispose() { Drop(); }

        void BeginBody(int n)
        {
            _need = n;
            _bodyCount = 0;
            _inBody = true;
        }

        /// <summary>The header checks of §11, from the 16 header bytes alone.</summary>
        unsafe bool Judge(byte* h, out int bodyLength)
        {
            bodyLength = 0;
            if (h[0] != 0x47 || h[1] != 0x52 || h[2] != 0x50 || h[3] != 0x43)
                return Fail("RPC-HDR-2", "bad magic " + Hex(new ReadOnlySpan<byte>(h, 4)));
            if (h[4] != 1) return Fail("RPC-HDR-3", "version " + h[4]);
            if (!RpcTypes.IsKnown(h[5])) return Fail("RPC-HDR-4", "unknown type 0x" + h[5].ToString("x2"));
            uint n = (uint)(h[12] << 24 | h[13] << 16 | h[14] << 8 | h[15]);
            if (RpcTypes.IsControl(h[5]) && n != 0) return Fail("RPC-BODY-5", "control frame type 0x" + h[5].ToString("x2") + " with a body of " + n + " bytes");
            if (n > _max) return Fail("RPC-LIM-1", "body of " + n + " bytes exceeds the maximum " + _max);
            bodyLength = (int)n;
            return true;
        }

        /// <summary>Parses the body fields of the frame with header <paramref name="h"/> and the
        /// <paramref name="n"/> body bytes at <paramref name="body"/>, hands the frame over, starts the next
        /// frame. False if the body fields are wrong (<paramref name="probe"/>, the hot path: with nothing
        /// changed, the general path then decides; else failed) or the handler stopped the decoder.</summary>
        unsafe bool Deliver(byte* h, byte* body, int n, IRpcFrameHandler handler, bool probe)
        {
            RpcFrame f;
            f.Version = h[4]; f.Type = h[5]; f.Flags = h[6]; f.Reserved = h[7];
            f.Id = (uint)(h[8] << 24 | h[9] << 16 | h[10] << 8 | h[11]);
            f.ErrorCode = 0;
            f.Names = null; f.ServiceLength = 0; f.MethodLength = 0;
            byte* payload = body;
            int pl = n;
            uint type = f.Type;
            if (type == RpcTypes.Request || type == RpcTypes.StreamInit)
            {
                int sl = n < 2 ? 0 : body[0] << 8 | body[1];
                int ml = n < 2 || 2 + sl + 2 > n ? 0 : body[2 + sl] << 8 | body[3 + sl];
                if (n < 2 || 2 + sl + 2 > n || 4 + sl + ml > n)
                {
                    if (probe) return false;
                    string req = type == RpcTypes.Request ? "RPC-BODY-1" : "RPC-BODY-3";
                    if (n < 2) return Fail(req, "body too short for the service length");
                    if (2 + sl + 2 > n) return Fail(req, "service name of " + sl + " bytes beyond the body");
                    return Fail(req, "method name of " + ml + " bytes beyond the body");
                }
                f.Names = body;
                f.ServiceLength = sl;
                f.MethodLength = ml;
                payload = body + 4 + sl + ml;
                pl = n - 4 - sl - ml;
            }
            else if (type == RpcTypes.Response)
            {
                if (n < 2) return probe ? false : Fail("RPC-BODY-2", "response body shorter than its error code");
                f.ErrorCode = (ushort)(body[0] << 8 | body[1]);
                payload = body + 2;
                pl = n - 2;
            }
            f.Payload = new ReadOnlySpan<byte>(payload, pl);
            if (probe) _pos += RpcTypes.HeaderLength + n;
            f.Offset = _frameStart;
            _frameStart = _pos;
            if (handler.OnFrame(ref f)) return true;
            _halted = true;
            return false;
        }

        /// <summary><see cref="Deliver"/> of the hot path (probe) for a REQUEST whose <paramref name="n"/>
        /// body bytes follow its header at <paramref name="h"/>: the same frame, the same result, in a
        /// method of its own without the error texts, whose locals Mono's JIT keeps in registers (it
        /// spills those of the larger Deliver to the stack).</summary>
        unsafe bool DeliverRequest(byte* h, int n, IRpcFrameHandler handler)
        {
            byte* body = h + RpcTypes.HeaderLength;
            if (n < 4) return false;
            int sl = body[0] << 8 | body[1];
            if (4 + sl > n) return false;
            int ml = body[2 + sl] << 8 | body[3 + sl];
            int pl = n - 4 - sl - ml;
            if (pl < 0) return false;
            RpcFrame f;
            f.Version = h[4]; f.Type = RpcTypes.Request; f.Flags = h[6]; f.Reserved = h[7];
            f.Id = (uint)(h[8] << 24 | h[9] << 16 | h[10] << 8 | h[11]);
            f.ErrorCode = 0;
            f.Names = body; f.ServiceLength = sl; f.MethodLength = ml;
            f.Payload = new ReadOnlySpan<byte>(body + 4 + sl + ml, pl);
            _pos += RpcTypes.HeaderLength + n;
            f.Offset = _frameStart;
            _frameStart = _pos;
            if (handler.OnFrame(ref f)) return true;
            _halted = true;
            return false;
        }

        void Ensure(int size) { _body = ByteBuffers.Grow(_body, _bodyCount, size, _need); }

        void Drop()
        {
            if (_body == null) return;
            ByteBuffers.Return(_body);
            _body = null;
        }

        bool Fail(string requirement, string message)
        {
            _failed = true;
            _error = new ProtocolError(requirement, _frameStart, message);
            _inBody = false;
            _hdrCount = 0;
            _bodyCount = 0;
            Drop();
            return false;
        }

        static string Hex(ReadOnlySpan<byte> b)
        {
            var c = new char[b.Length * 2];
            for (int i = 0; i < b.Length; i++) { c[2 * i] = "0123456789abcdef"[b[i] >> 4]; c[2 * i + 1] = "0123456789abcdef"[b[i] & 15]; }
            return new string(c);
        }
    }
}
