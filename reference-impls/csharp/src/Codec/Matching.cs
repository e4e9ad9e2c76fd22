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
        /// <summary>Takes what a one-way message needs (never pending; standard: the next sequence
        /// number without the pending check, STD-MATCH-4). Returns false on a failed connection.</summary>
        bool TryOneWay(out byte sequence);
        /// <summary>Completes requests whose deadline is ≤ now.</summary>
        void Expire(long nowMs);
        /// <summary>Fails every pending request (oldest first) and marks the connection failed.</summary>
        void FailAll();
        bool Failed { get; }
        int PendingCount { get; }
        /// <summary>Earliest pending deadline, or long.MaxValue.</summary>
        long NextDeadline { get; }
    }
}
