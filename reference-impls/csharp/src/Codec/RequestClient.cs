using System;
using System.Buffers;
using System.Diagnostics;
using System.Net.Sockets;
using System.Threading;
using System.Threading.Tasks;

namespace Frameproof.Codec
{
    /// <summary>Checks a reply payload against the request (called on the receive thread).</summary>
    public interface IReplyVerifier
    {
        bool Verify(RequestId id, ReadOnlySpan<byte> payload);
        void OnUnmatched(byte flag, byte sequence, ReadOnlySpan<byte> payload);
        void OnProtocolError(ProtocolError error);
    }

    /// <summary>
    /// One client connection with request/reply matching on a real clock: requests are encoded into
    /// a send buffer (<see cref="TryEnqueue"/>) and written by <see cref="Flush"/>; a receive thread
    /// decodes replies and completes pooled ValueTasks through the codec's matcher; a timer expires
    /// requests (STD-MATCH-3 / LF-MATCH-3).
    /// Enqueue/Flush are for a single driver at a time.
    /// </summary>
    public sealed class RequestClient : IMatchObserver, IDisposable
    {
        readonly Socket _socket;
        readonly FrameCodec _codec;
        readonly FrameDecoder _decoder;
        readonly IRequestMatcher _matcher;
        readonly IReplyVerifier _verifier;
        readonly CompletionSourcePool _pool;
        // Completions decided under _lock, delivered after it is released (so that an inline
        // continuation never runs inside the decoder or under the lock).
        PooledCompletionSource[] _doneSrc = new PooledCompletionSource[64];
        Completion[] _doneVal = new Completion[64];
        int _doneCount;
        readonly object _lock = new object();
        readonly Timer _timer;
        readonly Thread _receiver;
        byte[] _out;
        int _outLen;
        byte _oneWaySeq;
        volatile bool _closed;

        public long FramesReceived;
        public long Unmatched;

        /// <summary>With inlineCompletions, awaiting code resumes directly on the receive thread (no
        /// thread-pool hop); use it only when that code cannot block on a full socket, e.g. one
        /// request in flight per connection.</summary>
        public RequestClient(Socket socket, FrameCodec codec, long timeoutMs, IReplyVerifier verifier, bool inlineCompletions = false)
        {
            _pool = new CompletionSourcePool(512, inlineCompletions);
            _socket = socket;
            _codec = codec;
            _verifier = verifier;
            _decoder = codec.NewDecoder();
            _matcher = codec.NewMatcher(this, timeoutMs);
            _out = ArrayPool<byte>.Shared.Rent(64 * 1024);
            long period = Math.Max(5, Math.Min(100, (timeoutMs <= 0 ? Limits.DefaultTimeoutMs : timeoutMs) / 4));
            _timer = new Timer(OnTimer, null, period, period);
            _receiver = new Thread(ReceiveLoop) { IsBackground = true, Name = "fp-recv" };
            _receiver.Start();
        }

        public static long NowMs { get { return Stopwatch.GetTimestamp() * 1000 / Stopwatch.Frequency; } }

        public bool Failed { get { lock (_lock) return _matcher.Failed || _closed; } }
        public int BufferedBytes { get { return _outLen; } }

        /// <summary>Encodes a request into the send buffer and registers it as pending. Returns false
        /// (nothing buffered) if the send is refused (STD-SEQ-3, LF-MATCH-4, failed connection) or the
        /// encoder refuses the payload.</summary>
        public bool TryEnqueue(RequestId id, ReadOnlySpan<byte> payload, out ValueTask<Completion> task)
        {
            task = default(ValueTask<Completion>);
            ProtocolError err;
            if (!_codec.CheckPayload(payload.Length, out err)) return false;
            PooledCompletionSource src = _pool.Rent();
            src.SentTicks = Stopwatch.GetTimestamp();
            ValueTask<Completion> t = src.Task; // before registering: the source may complete at once
            byte seq;
            lock (_lock)
            {
                if (_closed || !_matcher.TryRequest(id, src, NowMs, out seq))
                {
                    src.TrySetResult(new Completion { Kind = CompletionKind.Refused, Id = id });
                    task = t;
                    return false;
                }
            }
            Append(seq, payload);
            task = t;
            return true;
        }

        /// <summary>Encodes a request that is not matched (receive mode: the server is a sink): it
        /// takes the next sequence number of a counter of its own.</summary>
        public bool EnqueueUnmatched(ReadOnlySpan<byte> payload)
        {
            ProtocolError err;
            if (!_codec.CheckPayload(payload.Length, out err)) return false;
            _oneWaySeq = unchecked((byte)(_oneWaySeq + 1));
            Append(_oneWaySeq, payload);
            return true;
        }

        void Append(byte seq, ReadOnlySpan<byte> payload)
        {
            int need = _codec.EncodedLength(payload.Length);
            if (_outLen + need > _out.Length)
            {
                byte[] nb = ArrayPool<byte>.Shared.Rent(Math.Max(_out.Length * 2, _outLen + need));
                Buffer.BlockCopy(_out, 0, nb, 0, _outLen);
                ArrayPool<byte>.Shared.Return(_out);
                _out = nb;
            }
            _outLen += _codec.WriteRequest(seq, payload, new Span<byte>(_out, _outLen, need));
        }

        /// <summary>Writes the buffered requests (blocking). Returns false if the socket failed.</summary>
        public bool Flush()
        {
            if (_outLen == 0) return true;
            try
            {
                int off = 0;
                while (off < _outLen)
                {
                    int n = _socket.Send(_out, off, _outLen - off, SocketFlags.None);
                    if (n <= 0) throw new SocketException((int)SocketError.ConnectionReset);
                    off += n;
                }
                _outLen = 0;
                if (_out.Length > 1024 * 1024)
                {
                    ArrayPool<byte>.Shared.Return(_out);
                    _out = ArrayPool<byte>.Shared.Rent(64 * 1024);
                }
                return true;
            }
            catch (Exception)
            {
                _outLen = 0;
                Close();
                return false;
            }
        }

        void ReceiveLoop()
        {
            byte[] buf = new byte[64 * 1024];
            try
            {
                while (!_closed)
                {
                    int n = _socket.Receive(buf, 0, buf.Length, SocketFlags.None);
                    if (n <= 0) break;
                    bool failed = false;
                    lock (_lock)
                    {
                        if (!_decoder.Feed(new ReadOnlySpan<byte>(buf, 0, n), _matcherHandler ?? (_matcherHandler = new CountingHandler(this))))
                        {
                            _verifier.OnProtocolError(_decoder.Error);
                            _matcher.FailAll();
                            failed = true;
                        }
                    }
                    DeliverCompletions();
                    if (failed) break;
                }
            }
            catch (Exception) { }
            lock (_lock)
            {
                if (!_decoder.Failed && !_decoder.Finish() && _matcher.PendingCount > 0)
                    _verifier.OnProtocolError(_decoder.Error);
                _matcher.FailAll();
            }
            DeliverCompletions();
            Close();
        }

        CountingHandler _matcherHandler;

        sealed class CountingHandler : IFrameHandler
        {
            readonly RequestClient _c;
            public CountingHandler(RequestClient c) { _c = c; }
            public void OnFrame(byte flag, byte sequence, ReadOnlySpan<byte> payload)
            {
                _c.FramesReceived++;
                _c._matcher.OnFrame(flag, sequence, payload);
            }
        }

        void OnTimer(object _)
        {
            lock (_lock)
            {
                if (_matcher.PendingCount == 0) return;
                _matcher.Expire(NowMs);
                if (_matcher.Failed) _closed = true; // a timeout that fails the connection (LF-MATCH-3)
            }
            DeliverCompletions();
            if (_closed) Close();
        }

        // IMatchObserver: called under _lock on the receive thread or the timer.
        public void OnReply(RequestId id, object state, byte flag, byte sequence, ReadOnlySpan<byte> payload)
        {
            var src = (PooledCompletionSource)state;
            long now = Stopwatch.GetTimestamp();
            bool ok = _verifier.Verify(id, payload);
            Defer(src, new Completion
            {
                Kind = CompletionKind.Reply, Id = id, Flag = flag, Sequence = sequence,
                PayloadLength = payload.Length, Verified = ok, LatencyTicks = now - src.SentTicks
            });
        }

        public void OnTimeout(RequestId id, object state)
        {
            Defer((PooledCompletionSource)state, new Completion { Kind = CompletionKind.Timeout, Id = id });
        }

        public void OnFailed(RequestId id, object state)
        {
            Defer((PooledCompletionSource)state, new Completion { Kind = CompletionKind.Failed, Id = id });
        }

        // Under _lock.
        void Defer(PooledCompletionSource src, Completion c)
        {
            if (_doneCount == _doneSrc.Length)
            {
                Array.Resize(ref _doneSrc, _doneSrc.Length * 2);
                Array.Resize(ref _doneVal, _doneVal.Length * 2);
            }
            _doneSrc[_doneCount] = src;
            _doneVal[_doneCount] = c;
            _doneCount++;
        }

        // Outside _lock; the receive thread and the timer may both deliver, so take the batch under a
        // separate lock and complete outside any lock.
        readonly object _deliverLock = new object();
        PooledCompletionSource[] _batchSrc = new PooledCompletionSource[64];
        Completion[] _batchVal = new Completion[64];

        bool _delivering;

        void DeliverCompletions()
        {
            lock (_deliverLock)
            {
                if (_delivering) return; // re-entered from an inline continuation: the outer loop delivers
                _delivering = true;
                try
                {
                    while (true)
                    {
                        int n;
                        lock (_lock)
                        {
                            n = _doneCount;
                            if (n == 0) return;
                            if (_batchSrc.Length < n)
                            {
                                _batchSrc = new PooledCompletionSource[_doneSrc.Length];
                                _batchVal = new Completion[_doneVal.Length];
                            }
                            Array.Copy(_doneSrc, _batchSrc, n);
                            Array.Copy(_doneVal, _batchVal, n);
                            Array.Clear(_doneSrc, 0, n);
                            _doneCount = 0;
                        }
                        for (int i = 0; i < n; i++)
                        {
                            PooledCompletionSource s = _batchSrc[i];
                            _batchSrc[i] = null;
                            s.TrySetResult(_batchVal[i]);
                        }
                    }
                }
                finally { _delivering = false; }
            }
        }

        public void OnUnmatched(byte flag, byte sequence, ReadOnlySpan<byte> payload)
        {
            Unmatched++;
            _verifier.OnUnmatched(flag, sequence, payload);
        }

        public void Close()
        {
            _closed = true;
            try { _socket.Shutdown(SocketShutdown.Both); } catch (Exception) { }
            try { _socket.Close(); } catch (Exception) { }
        }

        /// <summary>Half-closes the sending side (then the peer replies to what it has and closes).</summary>
        public void ShutdownSend()
        {
            try { _socket.Shutdown(SocketShutdown.Send); } catch (Exception) { }
        }

        /// <summary>Waits (bounded) for the receive thread to end.</summary>
        public bool WaitReceiver(int ms) { return _receiver.Join(ms); }

        public void Dispose()
        {
            Close();
            _timer.Dispose();
            _receiver.Join(2000);
            lock (_lock) { _matcher.FailAll(); }
            DeliverCompletions();
            _decoder.Dispose();
        }
    }
}
