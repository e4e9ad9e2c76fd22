using System;

namespace Frameproof.Codec
{
    /// <summary>
    /// Matching in send order: each reply completes the oldest pending request (frames carry no
    /// sequence number), over a fixed ring (a pending bound, default 256). A timeout completes the
    /// expired requests, fails every other one and fails the connection. It is `length-field`'s
    /// matching (LF-MATCH-1..4), and the load client's for protocols whose echoes come back in order
    /// without a request id (websocket).
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

        /// <summary>LF-MATCH-4: pending bound per connection (upstream 256).</summary>
        public const int DefaultPendingBound = 256;

        public FifoMatcher(IMatchObserver observer, long timeoutMs = 0, int bound = DefaultPendingBound)
        {
            _observer = observer;
            _timeoutMs = timeoutMs <= 0 ? Limits.DefaultTimeoutMs : timeoutMs;
            if (bound <= 0) bound = DefaultPendingBound;
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

        /// <summary>A one-way message is a plain frame that is never pending.</summary>
        public bool TryOneWay(out byte sequence)
        {
            sequence = 0;
            return !_failed;
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
