using System;

namespace Frameproof.Codec
{
    /// <summary>A classified protocol error: the requirement ID the input breaks and the byte
    /// offset (in the stream) where the offending frame starts.</summary>
    public readonly struct ProtocolError
    {
        public readonly string Requirement;
        public readonly long Offset;
        public readonly string Message;
        /// <summary>What the protocol itself says about the error on the wire (e.g. a WebSocket
        /// close code), or null.</summary>
        public readonly object Detail;

        public ProtocolError(string requirement, long offset, string message, object detail = null)
        {
            Requirement = requirement;
            Offset = offset;
            Message = message;
            Detail = detail;
        }

        /// <summary>The same error at another stream offset.</summary>
        public ProtocolError At(long offset) { return new ProtocolError(Requirement, offset, Message, Detail); }

        public bool IsSet { get { return Requirement != null; } }

        public override string ToString()
        {
            return Requirement + " at offset " + Offset + ": " + Message;
        }
    }

    /// <summary>Thrown by the throwing convenience APIs (encoders, configuration checks).</summary>
    public sealed class FrameproofException : Exception
    {
        public readonly ProtocolError Error;

        public FrameproofException(ProtocolError error) : base(error.ToString())
        {
            Error = error;
        }

        public string Requirement { get { return Error.Requirement; } }
        public long Offset { get { return Error.Offset; } }
    }

    public static class Limits
    {
        /// <summary>STD-LIM-1 / LF-LIM-1 default: 10 MiB (upstream MaxCache).</summary>
        public const long DefaultMaxPayload = 10L * 1024 * 1024;

        /// <summary>STD-MATCH-3 / LF-MATCH-3 default request timeout.</summary>
        public const long DefaultTimeoutMs = 3000;

        /// <summary>0 means "the spec default".</summary>
        public static long Effective(long maxPayload)
        {
            return maxPayload <= 0 ? DefaultMaxPayload : maxPayload;
        }

        /// <summary>An encoder's check of a payload against the maximum (*-LIM-2; 0 means the spec
        /// default): false, with an error under <paramref name="requirement"/>, if it is above it.</summary>
        public static bool CheckPayload(long payloadLength, long maxPayload, string requirement, out ProtocolError error)
        {
            long max = Effective(maxPayload);
            if (payloadLength > max)
            {
                error = new ProtocolError(requirement, 0, "payload of " + payloadLength + " bytes exceeds the maximum " + max);
                return false;
            }
            error = default(ProtocolError);
            return true;
        }
    }

    /// <summary>Receives decoded frames. The payload span is valid only during the call.
    /// For length-field, flag and sequence are 0.</summary>
    public interface IFrameHandler
    {
        void OnFrame(byte flag, byte sequence, ReadOnlySpan<byte> payload);
    }
}
