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
    /// decodes replies and completes pooled ValueTasks through the protocol's
    /// <see cref="ClientChannel"/> (decoder and matcher); a timer expires requests (STD-MATCH-3 /
    /// LF-MATCH-3 / RPC-MATCH-3). A protocol with an opening handshake (websocket) has it done in
    /// the constructor, before the receive thread starts.
    /// Enqueue/Flush are for a single driver at a time.
    /// </summary>
    public sealed class RequestClient : IClientObserver, IDisposable
    {
        readonly Socket _socket;
        readonly ClientChannel _channel;
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
        readonly SendBuffer _out = new SendBuffer();
        byte[] _initial;       // frames that arrived with the opening handshake's answer
        volatile bool _closed;

        public long FramesReceived { get { return _channel.FramesReceived; } }
        public long Unmatched;

        /// <summary>With inlineCompletions, awaiting code resumes directly on the receive thread (no
        /// thread-pool hop); use it only when that code cannot block on a full socket, e.g. one
        /// request in flight per connection. The last two arguments: the index of the request variant
        /// in <see cref="FrameCodec.LoadVariants"/>, and the host name an opening handshake names.</summary>
        public RequestClient(Socket socket, FrameCodec codec, long timeoutMs, IReplyVerifier verifier, bool inlineCompletions = false,
            int variant = 0, string host = "127.0.0.1")
        {
            _pool = new CompletionSourcePool(512, inlineCompletions);
            _socket = socket;
            _verifier = verifier;
            _channel = codec.NewClientChannel(this, timeoutMs, variant);
            Opening(host, timeoutMs <= 0 ? Limits.DefaultTimeoutMs : timeoutMs);
            long period = Math.Max(5, Math.Min(100, (timeoutMs <= 0 ? Limits.DefaultTimeoutMs : timeoutMs) / 4));
            _timer = new Timer(OnTimer, null, period, period);
            _receiver = new Thread(ReceiveLoop) { IsBackground = true, Name = "fp-recv" };
            _receiver.Start();
        }

        /// <summary>The opening handshake, if the protocol has one (blocking, bounded by the timeout);
        /// throws if it fails.</summary>
        void Opening(string host, long timeoutMs)
        {
            byte[] request = _channel.OpeningRequest(host);
            if (request == null) return;
            int old = _socket.ReceiveTimeout;
            _socket.ReceiveTimeout = (int)Math.Min(timeoutMs, int.MaxValue);
            try
            {
                _socket.Send(request);
                var got = new byte[16 * 1024];
                int n = 0;
                while (true)
                {
                    if (n == got.Length) throw new InvalidOperationException("opening handshake: answer longer than " + got.Length + " bytes");
                    int m = _socket.Receive(got, n, got.Length - n, SocketFlags.None);
                    if (m <= 0) throw new InvalidOperationException("opening handshake: the server closed the connection");
                    n += m;
                    string error;
                    int used = _channel.AcceptOpening(new ReadOnlySpan<byte>(got, 0, n), out error);
                    if (used < 0) throw new InvalidOperationException("opening handshake: " + error);
                    if (used == 0) continue;
                    if (used < n) _initial = new ReadOnlySpan<byte>(got, used, n - used).ToArray();
                    return;
                }
            }
            finally { _socket.ReceiveTimeout = old; }
        }

        public static long NowMs { get { return Stopwatch.GetTimestamp() * 1000 / Stopwatch.Frequency; } }

        public bool Failed { get { lock (_lock) return _channel.Failed || _closed; } }
        public int BufferedBytes { get { return _out.Length; } }

        /// <summary>Encodes a request into the send buffer and registers it as pending. Returns false
        /// (nothing buffered) if the send is refused (STD-SEQ-3, LF-MATCH-4, failed connection) or the
        /// encoder refuses the payload.</summary>
        public bool TryEnqueue(RequestId id, ReadOnlySpan<byte> payload, out ValueTask<Completion> task)
        {
            task = default(ValueTask<Completion>);
            PooledCompletionSource src = _pool.Rent();
            src.SentTicks = Stopwatch.GetTimestamp();
            ValueTask<Completion> t = src.Task; // before registering: the source may complete at once
            lock (_lock)
            {
                if (_closed || !_channel.TryRequest(id, src, NowMs, payload, _out))
                {
                    src.TrySetResult(new Completion { Kind = CompletionKind.Refused, Id = id });
                    task = t;
                    return false;
                }
            }
            task = t;
            return true;
        }

        /// <summary>Encodes a request that is not matched (receive mode: the server is a sink).</summary>
        public bool EnqueueUnmatched(ReadOnlySpan<byte> payload)
        {
            lock (_lock) return _channel.EncodeUnmatched(payload, _out);
        }

        /// <summary>Writes the buffered requests (blocking). Returns false if the socket failed.</summary>
        public bool Flush()
        {
            if (_out.Length == 0) return true;
            try
            {
                int off = 0, len = _out.Length;
                byte[] buf = _out.Buffer;
                while (off < len)
                {
                    int n = _socket.Send(buf, off, len - off, SocketFlags.None);
                    if (n <= 0) throw new SocketException((int)SocketError.ConnectionReset);
                    off += n;
                }
                _out.Clear();
                return true;
            }
            catch (Exception)
            {
                _out.Clear();
                Close();
                return false;
            }
        }

        /// <summary>The protocol's closing handshake, if it has one (websocket: a close frame with
        /// code 1000): writes it and waits, at most <paramref name="timeoutMs"/>, for the peer's answer
        /// (the receive thread sees it). Returns false if the answer did not come.</summary>
        public bool CloseHandshake(int timeoutMs)
        {
            byte[] frame;
            lock (_lock) frame = _closed ? null : _channel.ClosingFrame();
            if (frame == null) return true;
            try { _socket.Send(frame); }
            catch (Exception) { return false; }
            var sw = Stopwatch.StartNew();
            while (sw.ElapsedMilliseconds < timeoutMs)
            {
                lock (_lock) if (_channel.PeerClosed) return true;
                if (_receiver.Join(5)) break;
            }
            lock (_lock) return _channel.PeerClosed;
        }

        void ReceiveLoop()
        {
            byte[] buf = new byte[64 * 1024];
            try
            {
                if (_initial != null && !FeedReceived(_initial, _initial.Length)) throw new InvalidOperationException("rejected");
                _initial = null;
                while (!_closed)
                {
                    int n = _socket.Receive(buf, 0, buf.Length, SocketFlags.None);
                    if (n <= 0) break;
                    if (!FeedReceived(buf, n)) break;
                }
            }
            catch (Exception) { }
            lock (_lock)
            {
                if (!_channel.Error.IsSet && !_channel.Finish() && _channel.PendingCount > 0)
                    _verifier.OnProtocolError(_channel.Error);
                _channel.FailAll();
            }
            DeliverCompletions();
            Close();
        }

        bool FeedReceived(byte[] buf, int n)
        {
            bool failed = false;
            lock (_lock)
            {
                if (!_channel.Feed(new ReadOnlySpan<byte>(buf, 0, n)))
                {
                    _verifier.OnProtocolError(_channel.Error);
                    _channel.FailAll();
                    failed = true;
                }
            }
            DeliverCompletions();
            return !failed;
        }

        void OnTimer(object _)
        {
            lock (_lock)
            {
                if (_channel.PendingCount == 0) return;
                _channel.Expire(NowMs);
                if (_channel.Failed) _closed = true; // a timeout that fails the connection (LF-MATCH-3)
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

        public void OnRejectedReply(RequestId id, object state, string why)
        {
            var src = (PooledCompletionSource)state;
            Defer(src, new Completion
            {
                Kind = CompletionKind.Reply, Id = id, Verified = false, Rejected = why,
                LatencyTicks = Stopwatch.GetTimestamp() - src.SentTicks
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
            lock (_lock) { _channel.FailAll(); }
            DeliverCompletions();
            _channel.Dispose();
            _out.Dispose();
        }
    }
}
