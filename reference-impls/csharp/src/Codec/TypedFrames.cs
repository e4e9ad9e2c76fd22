using System;
using System.Collections.Generic;

namespace Frameproof.Codec
{
    /// <summary>
    /// One frame in protocol-neutral, owning form, as the testee carries it: standard's flag and
    /// sequence, the payload, and for protocols whose frames carry more (rpc, websocket) a header
    /// object of the protocol's own type (<see cref="RpcHeader"/>, <see cref="WebSocketHeader"/>).
    /// </summary>
    public sealed class FrameValue
    {
        public uint Flag;
        public uint Sequence;
        public byte[] Payload = new byte[0];
        /// <summary>The protocol's header object, or null (a frame given without one).</summary>
        public object Header;
    }

    /// <summary>What a decoder delivered for a whole stream (the testee's decode).</summary>
    public sealed class DecodeOutcome
    {
        public readonly List<FrameValue> Frames = new List<FrameValue>();
        /// <summary>Set when the stream was rejected.</summary>
        public ProtocolError Error;
    }

    /// <summary>The encoder's answer for one frame: bytes, a classified refusal, or "not supported".</summary>
    public sealed class EncodeOutcome
    {
        public byte[] Encoded;
        public ProtocolError Error;
        /// <summary>Why this implementation cannot answer (the testee's <c>skipped</c>), or null.</summary>
        public string Skipped;
    }

    public enum MatchStepKind { Send, SendOneWay, SendFrame, Receive, AdvanceMs }

    /// <summary>One event of a client-matching script (spec/testee.md, match).</summary>
    public sealed class MatchStep
    {
        public MatchStepKind Kind;
        public byte[] Bytes = new byte[0];   // send, send_one_way, receive
        public FrameValue Frame;             // send_frame
        public uint AdvanceMs;
    }

    public sealed class MatchCompletion
    {
        public CompletionKind Kind;
        public uint Request;
        public FrameValue Frame;             // REPLY, UNMATCHED
    }

    /// <summary>The result of a matching script: bytes written per send, completions in order, error.</summary>
    public sealed class MatchOutcome
    {
        public readonly List<byte[]> Sent = new List<byte[]>();
        public readonly List<MatchCompletion> Completions = new List<MatchCompletion>();
        public ProtocolError Error;
        /// <summary>Why this implementation cannot answer, or null.</summary>
        public string Skipped;
    }

    /// <summary>
    /// The testee-facing side of a protocol whose frames carry a typed header (rpc, websocket): the
    /// whole decode / encode / match operations on <see cref="FrameValue"/>s. Protocols whose frames
    /// are (flag, sequence, payload) do not need it: the testee drives their
    /// <see cref="FrameDecoder"/> and <see cref="IRequestMatcher"/> directly.
    /// </summary>
    public interface ITypedFrames
    {
        /// <summary>Feeds <paramref name="reads"/> in order to one decoder, handing each frame to
        /// <paramref name="onFrame"/> as it completes; with <paramref name="finish"/> the end of the
        /// stream is checked too. Returns the error that stopped the stream (unset if none).</summary>
        ProtocolError DecodeReads(IEnumerable<ArraySegment<byte>> reads, Action<FrameValue> onFrame, bool finish);
        EncodeOutcome Encode(FrameValue frame);
        MatchOutcome Match(long timeoutMs, IList<MatchStep> steps);
    }

    public static class TypedFramesDecode
    {
        /// <summary>The testee's decode: every chunk through one decoder, then the end of the stream;
        /// the frames delivered and the error that stopped it.</summary>
        public static DecodeOutcome Decode(this ITypedFrames typed, IList<byte[]> chunks)
        {
            var r = new DecodeOutcome();
            var segments = new List<ArraySegment<byte>>(chunks.Count);
            foreach (byte[] ch in chunks) segments.Add(new ArraySegment<byte>(ch));
            r.Error = typed.DecodeReads(segments, r.Frames.Add, true);
            return r;
        }
    }
}
