using System;
using System.Collections.Generic;
using System.Threading;
using System.Threading.Tasks;
using System.Threading.Tasks.Sources;

namespace Frameproof.Codec
{
    public enum CompletionKind : byte { None = 0, Reply = 1, Timeout = 2, Unmatched = 3, Failed = 4, Refused = 5 }

    /// <summary>Outcome of one request (a struct, returned through a pooled ValueTask).</summary>
    public struct Completion
    {
        public CompletionKind Kind;
        public RequestId Id;
        public byte Flag;
        public byte Sequence;
        public int PayloadLength;
        /// <summary>Set by the client's verifier (payload equal to the expected one).</summary>
        public bool Verified;
        /// <summary>Stopwatch ticks from writing the request to reading its reply.</summary>
        public long LatencyTicks;
        /// <summary>Why the protocol's client side rejected the reply's header, or null.</summary>
        public string Rejected;
    }

    /// <summary>
    /// A reusable <see cref="IValueTaskSource{T}"/>: one per pending request, rented from a
    /// <see cref="CompletionSourcePool"/> and returned to it by <see cref="GetResult"/>, so a
    /// request costs no TaskCompletionSource/Task allocation. Continuations are queued to the
    /// thread pool with a static callback (or run inline if the pool says so), so completing does
    /// not allocate either. The version token guards against
    /// a stale ValueTask observing a reused source.
    /// </summary>
    public sealed class PooledCompletionSource : IValueTaskSource<Completion>
    {
        static readonly Action<object> Sentinel = DoNothing;
        static readonly WaitCallback InvokeCallback = Invoke;

        readonly CompletionSourcePool _pool;
        short _version;
        int _done;                 // 0 → 1 by the first TrySetResult
        int _refs;                 // 2 when rented; see Release
        volatile bool _completed;  // result visible
        Completion _result;
        Action<object> _continuation;
        object _continuationState;

        /// <summary>Free for the owner: e.g. the Stopwatch timestamp when the request was written.</summary>
        public long SentTicks;

        internal PooledCompletionSource(CompletionSourcePool pool) { _pool = pool; }

        public ValueTask<Completion> Task { get { return new ValueTask<Completion>(this, _version); } }

        public bool TrySetResult(Completion result)
        {
            if (Interlocked.CompareExchange(ref _done, 1, 0) != 0) return false;
            _result = result;
            _completed = true;
            Action<object> prev = Interlocked.CompareExchange(ref _continuation, Sentinel, null);
            if (prev != null)
            {
                if (_pool.InlineContinuations) Invoke(this);
                else ThreadPool.UnsafeQueueUserWorkItem(InvokeCallback, this);
            }
            Release(); // the completer's reference: the source is recycled only after both sides are done
            return true;
        }

        public ValueTaskSourceStatus GetStatus(short token)
        {
            CheckToken(token);
            return _completed ? ValueTaskSourceStatus.Succeeded : ValueTaskSourceStatus.Pending;
        }

        public void OnCompleted(Action<object> continuation, object state, short token, ValueTaskSourceOnCompletedFlags flags)
        {
            CheckToken(token);
            _continuationState = state;
            Action<object> prev = Interlocked.CompareExchange(ref _continuation, continuation, null);
            if (prev != null)
            {
                if (!ReferenceEquals(prev, Sentinel)) throw new InvalidOperationException("multiple awaiters");
                _continuation = continuation; // already completed: run it on the pool
                ThreadPool.UnsafeQueueUserWorkItem(InvokeCallback, this);
            }
        }

        public Completion GetResult(short token)
        {
            CheckToken(token);
            if (!_completed) throw new InvalidOperationException("not completed");
            Completion r = _result;
            _version++;   // the ValueTask is consumed: any later use of it is detected as stale
            Release();    // the awaiter's reference
            return r;
        }

        internal void OnRent()
        {
            Volatile.Write(ref _refs, 2);
        }

        /// <summary>Two references per use: the completer (TrySetResult) and the awaiter (GetResult).
        /// Whichever finishes last resets the source and returns it to the pool, so a completer still
        /// inside TrySetResult can never touch a source that was already handed to the next request.</summary>
        void Release()
        {
            if (Interlocked.Decrement(ref _refs) != 0) return;
            _result = default(Completion);
            _continuation = null;
            _continuationState = null;
            _completed = false;
            SentTicks = 0;
            Volatile.Write(ref _done, 0);
            _pool.Return(this);
        }

        void CheckToken(short token)
        {
            if (token != _version) throw new InvalidOperationException("stale ValueTask (source reused)");
        }

        static void Invoke(object o)
        {
            var s = (PooledCompletionSource)o;
            s._continuation(s._continuationState);
        }

        static void DoNothing(object o) { }
    }

    /// <summary>A bounded pool of completion sources (one per connection is typical).</summary>
    public sealed class CompletionSourcePool
    {
        readonly Stack<PooledCompletionSource> _free = new Stack<PooledCompletionSource>();
        readonly int _max;
        public long Created;

        /// <summary>Run awaiters' continuations synchronously in TrySetResult (on the completing
        /// thread) instead of queueing them to the thread pool. Saves a thread hop per request;
        /// only safe when the continuation cannot block the completing thread for long.</summary>
        public readonly bool InlineContinuations;

        public CompletionSourcePool(int max = 1024, bool inlineContinuations = false)
        {
            _max = max;
            InlineContinuations = inlineContinuations;
        }

        public PooledCompletionSource Rent()
        {
            lock (_free)
            {
                if (_free.Count > 0)
                {
                    PooledCompletionSource s = _free.Pop();
                    s.OnRent();
                    return s;
                }
            }
            Interlocked.Increment(ref Created);
            var n = new PooledCompletionSource(this);
            n.OnRent();
            return n;
        }

        internal void Return(PooledCompletionSource s)
        {
            lock (_free)
            {
                if (_free.Count < _max) _free.Push(s);
            }
        }
    }
}
