using System;

namespace Frameproof.Codec
{
    /// <summary>Application-side identity of a request (a struct: no allocation per request).</summary>
    public readonly struct RequestId : IEquatable<RequestId>
    {
        public readonly long Value;
        public RequestId(long value) { Value = value; }
        public bool Equals(RequestId other) { return Value == other.Value; }
        public override bool Equals(object obj) { return obj is RequestId && Equals((RequestId)obj); }
        public override int GetHashCode() { return Value.GetHashCode(); }
        public override string ToString() { return Value.ToString(); }
    }

    /// <summary>Receives match outcomes. Called synchronously from the matcher (under the caller's
    /// lock, if any); the payload span is valid only during the call. <c>state</c> is the object
    /// given to TryRequest (e.g. a pooled completion source), or null.</summary>
    public interface IMatchObserver
    {
        void OnReply(RequestId id, object state, byte flag, byte sequence, ReadOnlySpan<byte> payload);
        void OnTimeout(RequestId id, object state);
        void OnFailed(RequestId id, object state);
        void OnUnmatched(byte flag, byte sequence, ReadOnlySpan<byte> payload);
    }

    /// <summary>Client-side request/reply matching on one connection, clock-agnostic: the caller
    /// passes "now" in milliseconds (a virtual clock in the testee, Stopwatch in the load client).
    /// Feed decoded frames through <see cref="IFrameHandler.OnFrame"/>. Not thread-safe.</summary>
    public interface IRequestMatcher : IFrameHandler
    {
        /// <summary>Registers a new pending request. Returns false if the send must be refused
        /// (STD-SEQ-3, LF-MATCH-4, or the connection has failed); then nothing may be written.
        /// For standard, <paramref name="sequence"/> is the sequence number to write.</summary>
        bool TryRequest(RequestId id, object state, long nowMs, out byte sequence);
        /// <summary>Completes requests whose deadline is ≤ now.</summary>
        void Expire(long nowMs);
        /// <summary>Fails every pending request (oldest first) and marks the connection failed.</summary>
        void FailAll();
        bool Failed { get; }
        int PendingCount { get; }
        /// <summary>Earliest pending deadline, or long.MaxValue.</summary>
        long NextDeadline { get; }
    }

    /// <summary>
    /// `standard` matching: a 256-slot table indexed by sequence number (STD-MATCH-1), plus an
    /// intrusive list in send order for timeouts (STD-MATCH-3, oldest first). All arrays are
    /// allocated once; per request there is no allocation.
    /// </summary>
    public sealed class StandardMatcher : IRequestMatcher
    {
        readonly IMatchObserver _observer;
        readonly long _timeoutMs;
        readonly bool[] _pending = new bool[256];
        readonly long[] _ids = new long[256];
        readonly object[] _states = new object[256];
        readonly long[] _deadlines = new long[256];
        readonly short[] _prev = new short[256];
        readonly short[] _next = new short[256];
        short _head = -1, _tail = -1;
        int _count;
        byte _last;            // last sequence number used; the first request carries 1 (STD-SEQ-1)
        bool _failed;

        public StandardMatcher(IMatchObserver observer, long timeoutMs = 0)
        {
            _observer = observer;
            _timeoutMs = timeoutMs <= 0 ? Limits.DefaultTimeoutMs : timeoutMs;
        }

        public bool Failed { get { return _failed; } }
        public int PendingCount { get { return _count; } }
        public long NextDeadline { get { return _head < 0 ? long.MaxValue : _deadlines[_head]; } }
        /// <summary>Frames with bit 7 clear received (requests from the peer, STD-MATCH-5).</summary>
        public long PeerRequests;

        public bool TryRequest(RequestId id, object state, long nowMs, out byte sequence)
        {
            byte next = unchecked((byte)(_last + 1));
            sequence = next;
            if (_failed || _pending[next]) return false; // STD-SEQ-3: refused, counter not advanced
            _last = next;
            _pending[next] = true;
            _ids[next] = id.Value;
            _states[next] = state;
            _deadlines[next] = nowMs + _timeoutMs;
            _prev[next] = _tail;
            _next[next] = -1;
            if (_tail >= 0) _next[_tail] = next; else _head = next;
            _tail = next;
            _count++;
            return true;
        }

        /// <summary>STD-MATCH-4: a one-way message takes the next number, with no pending check.</summary>
        public byte NextOneWay()
        {
            _last = unchecked((byte)(_last + 1));
            return _last;
        }

        public void OnFrame(byte flag, byte sequence, ReadOnlySpan<byte> payload)
        {
            if (_failed) return;
            if (!StandardFlags.IsReply(flag)) { PeerRequests++; return; } // STD-MATCH-5
            if (_pending[sequence])
            {
                object st = _states[sequence];
                long id = _ids[sequence];
                Remove(sequence);
                _observer.OnReply(new RequestId(id), st, flag, sequence, payload); // incl. error replies (STD-MATCH-6)
            }
            else
            {
                _observer.OnUnmatched(flag, sequence, payload); // STD-MATCH-2
            }
        }

        public void Expire(long nowMs)
        {
            while (_head >= 0 && _deadlines[_head] <= nowMs)
            {
                short s = _head;
                object st = _states[s];
                long id = _ids[s];
                Remove(s);
                _observer.OnTimeout(new RequestId(id), st);
            }
        }

        public void FailAll()
        {
            _failed = true;
            while (_head >= 0)
            {
                short s = _head;
                object st = _states[s];
                long id = _ids[s];
                Remove(s);
                _observer.OnFailed(new RequestId(id), st);
            }
        }

        void Remove(int s)
        {
            _pending[s] = false;
            _states[s] = null;
            short p = _prev[s], n = _next[s];
            if (p >= 0) _next[p] = n; else _head = n;
            if (n >= 0) _prev[n] = p; else _tail = p;
            _count--;
        }
    }

    /// <summary>
    /// `length-field` matching: FIFO (LF-MATCH-1) over a fixed ring (LF-MATCH-4 bound, default 256).
    /// A timeout completes the expired requests, fails every other one and fails the connection
    /// (LF-MATCH-3).
    /// </summary>
    public sealed class FifoMatcher : IRequestMatcher
    {
        readonly IMatchObserver _observer;
        readonly long _timeoutMs;
        readonly long[] _ids;
        readonly object[] _states;
        readonly long[] _deadlines;
        int _head, _count;
        bool _failed;

        public FifoMatcher(IMatchObserver observer, long timeoutMs = 0, int bound = Limits.DefaultFifoPendingBound)
        {
            _observer = observer;
            _timeoutMs = timeoutMs <= 0 ? Limits.DefaultTimeoutMs : timeoutMs;
            if (bound <= 0) bound = Limits.DefaultFifoPendingBound;
            _ids = new long[bound];
            _states = new object[bound];
            _deadlines = new long[bound];
        }

        public bool Failed { get { return _failed; } }
        public int PendingCount { get { return _count; } }
        public long NextDeadline { get { return _count == 0 ? long.MaxValue : _deadlines[_head]; } }

        public bool TryRequest(RequestId id, object state, long nowMs, out byte sequence)
        {
            sequence = 0;
            if (_failed || _count == _ids.Length) return false;
            int i = (_head + _count) % _ids.Length;
            _ids[i] = id.Value;
            _states[i] = state;
            _deadlines[i] = nowMs + _timeoutMs;
            _count++;
            return true;
        }

        public void OnFrame(byte flag, byte sequence, ReadOnlySpan<byte> payload)
        {
            if (_failed) return; // LF-MATCH-3: frames after the failure complete nothing
            if (_count == 0)
            {
                _observer.OnUnmatched(flag, sequence, payload); // LF-MATCH-2
                return;
            }
            object st; long id;
            Dequeue(out id, out st);
            _observer.OnReply(new RequestId(id), st, flag, sequence, payload);
        }

        public void Expire(long nowMs)
        {
            if (_failed || _count == 0 || _deadlines[_head] > nowMs) return;
            while (_count > 0 && _deadlines[_head] <= nowMs)
            {
                object st; long id;
                Dequeue(out id, out st);
                _observer.OnTimeout(new RequestId(id), st);
            }
            FailAll();
        }

        public void FailAll()
        {
            _failed = true;
            while (_count > 0)
            {
                object st; long id;
                Dequeue(out id, out st);
                _observer.OnFailed(new RequestId(id), st);
            }
        }

        void Dequeue(out long id, out object state)
        {
            id = _ids[_head];
            state = _states[_head];
            _states[_head] = null;
            _head = (_head + 1) % _ids.Length;
            _count--;
        }
    }
}
