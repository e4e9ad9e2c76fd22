using System;
using System.Buffers;
using System.Buffers.Binary;
using System.Collections.Generic;
using System.Runtime.InteropServices;

namespace Frameproof.Codec
{
    /// <summary>
    /// rpc client side of one connection (spec/rpc.md §8): ids 0, 1, 2 ... from a per-connection
    /// counter (RPC-ID-1), a send refused while the next id is pending (RPC-ID-2), RESPONSEs matched
    /// by id whatever their order or flags (RPC-MATCH-1), unmatched ones reported (RPC-MATCH-2),
    /// timeouts oldest first (RPC-MATCH-3), other types ignored (RPC-MATCH-4), error codes passed
    /// on (RPC-MATCH-5). Feed it decoded frames as an <see cref="IRpcFrameHandler"/>. Not thread-safe.
    /// </summary>
    public sealed class RpcMatcher : IRpcFrameHandler
    {
        // Pending requests in slots of parallel arrays, linked in send order (oldest first for
        // timeouts), found by id through a dictionary of slot indices; freed slots are reused, so a
        // request allocates nothing once the arrays have grown to the largest number in flight.
        readonly IRpcMatchObserver _observer;
        readonly long _timeoutMs;
        readonly Dictionary<uint, int> _index = new Dictionary<uint, int>();
        uint[] _ids = new uint[16];
        long[] _requests = new long[16];
        object[] _states = new object[16];
        long[] _deadlines = new long[16];
        int[] _prev = new int[16], _next = new int[16];
        int _head = -1, _tail = -1, _free = -1, _used;
        uint _nextId;
        bool _failed;

        public RpcMatcher(IRpcMatchObserver observer, long timeoutMs = 0)
        {
            _observer = observer;
            _timeoutMs = timeoutMs <= 0 ? Limits.DefaultTimeoutMs : timeoutMs;
        }

        public bool Failed { get { return _failed; } }
        public int PendingCount { get { return _index.Count; } }
        public long NextDeadline { get { return _head < 0 ? long.MaxValue : _deadlines[_head]; } }

        /// <summary>The id the next request would carry, if it may be sent (RPC-ID-2; not on a failed connection).</summary>
        public bool TryNextId(out uint id)
        {
            id = _nextId;
            return !_failed && !_index.ContainsKey(_nextId);
        }

        /// <summary>Registers the request just written with <paramref name="id"/> (from TryNextId) and
        /// advances the counter.</summary>
        public void Sent(uint id, long request, object state, long nowMs)
        {
            int s;
            if (_free >= 0) { s = _free; _free = _next[s]; }
            else
            {
                if (_used == _ids.Length) Grow();
                s = _used++;
            }
            _ids[s] = id;
            _requests[s] = request;
            _states[s] = state;
            _deadlines[s] = nowMs + _timeoutMs;
            _prev[s] = _tail;
            _next[s] = -1;
            if (_tail >= 0) _next[_tail] = s; else _head = s;
            _tail = s;
            _index[id] = s;
            _nextId = unchecked(id + 1);
        }

        void Grow()
        {
            int n = _ids.Length * 2;
            Array.Resize(ref _ids, n);
            Array.Resize(ref _requests, n);
            Array.Resize(ref _states, n);
            Array.Resize(ref _deadlines, n);
            Array.Resize(ref _prev, n);
            Array.Resize(ref _next, n);
        }

        public bool OnFrame(ref RpcFrame f)
        {
            if (_failed) return false;
            if (f.Type != RpcTypes.Response) return true; // RPC-MATCH-4
            int s;
            if (_index.TryGetValue(f.Id, out s))
            {
                long request = _requests[s];
                object st = Remove(s);
                _observer.OnReply(request, st, ref f);
            }
            else _observer.OnUnmatched(ref f); // RPC-MATCH-2
            return true;
        }

        public void Expire(long nowMs)
        {
            while (_head >= 0 && _deadlines[_head] <= nowMs)
            {
                long request = _requests[_head];
                object st = Remove(_head);
                _observer.OnTimeout(request, st);
            }
        }

        public void FailAll()
        {
            _failed = true;
            while (_head >= 0)
            {
                long request = _requests[_head];
                object st = Remove(_head);
                _observer.OnFailed(request, st);
            }
        }

        /// <summary>Unlinks and frees slot s; returns its state.</summary>
        object Remove(int s)
        {
            object st = _states[s];
            _states[s] = null;
            _index.Remove(_ids[s]);
            int p = _prev[s], n = _next[s];
            if (p >= 0) _next[p] = n; else _head = n;
            if (n >= 0) _prev[n] = p; else _tail = p;
            _next[s] = _free;
            _free = s;
            return st;
        }
    }
}
