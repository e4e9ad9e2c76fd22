// Hand-written proto3 wire format: the reader and writer of the testee messages
// (schemas/testee.proto; the messages are in src/Testee/TesteeProto.cs, each protocol's own members
// in its module, ProtocolModule.OneofMember).
//
// Why hand-written: this machine has no .NET SDK, no NuGet and therefore no Google.Protobuf
// runtime or protoc C# plugin usable from Mono's mcs. The testee protocol needs only a handful of
// messages, and proto3's wire format for them is just varints (wire type 0) and length-delimited
// fields (wire type 2), so a small reader/writer is smaller than vendoring a runtime. Unknown
// fields are skipped (all wire types), so newer runners stay compatible.
using System;
using System.IO;
using System.Text;

namespace Frameproof.Codec
{
    public sealed class ProtoFormatException : Exception
    {
        public ProtoFormatException(string m) : base(m) { }
    }

    /// <summary>Reads proto3 wire format from a byte array slice.</summary>
    public sealed class ProtoReader
    {
        readonly byte[] _b;
        int _pos;
        readonly int _end;

        public ProtoReader(byte[] b) : this(b, 0, b.Length) { }
        public ProtoReader(byte[] b, int offset, int length) { _b = b; _pos = offset; _end = offset + length; }

        public bool AtEnd { get { return _pos >= _end; } }

        public ulong ReadVarint()
        {
            ulong v = 0;
            for (int shift = 0; shift < 70; shift += 7)
            {
                if (_pos >= _end) throw new ProtoFormatException("truncated varint");
                byte x = _b[_pos++];
                if (shift == 63 && x > 1) throw new ProtoFormatException("varint overflow");
                v |= (ulong)(x & 0x7F) << shift;
                if ((x & 0x80) == 0) return v;
            }
            throw new ProtoFormatException("varint too long");
        }

        /// <summary>A sint32 (zigzag-encoded varint).</summary>
        public int ReadSInt32()
        {
            uint z = (uint)ReadVarint();
            return (int)(z >> 1) ^ -(int)(z & 1);
        }

        /// <summary>The rest of a message whose one field is field 1, a uint32 varint (0 if absent, the
        /// last one if repeated); other fields are skipped.</summary>
        public uint ReadField1UInt32()
        {
            uint value = 0;
            while (!AtEnd)
            {
                int g, w; ReadTag(out g, out w);
                if (g == 1) { Expect(w, 0, g); value = (uint)ReadVarint(); } else Skip(w);
            }
            return value;
        }

        /// <summary>Returns (field number, wire type).</summary>
        public void ReadTag(out int field, out int wireType)
        {
            ulong t = ReadVarint();
            field = (int)(t >> 3);
            wireType = (int)(t & 7);
            if (field <= 0) throw new ProtoFormatException("field number 0");
        }

        public ProtoReader ReadMessage()
        {
            int off, len;
            ReadLengthDelimited(out off, out len);
            return new ProtoReader(_b, off, len);
        }

        public void ReadLengthDelimited(out int offset, out int length)
        {
            ulong len = ReadVarint();
            if (len > (ulong)(_end - _pos)) throw new ProtoFormatException("truncated length-delimited field");
            offset = _pos;
            length = (int)len;
            _pos += (int)len;
        }

        public byte[] ReadBytes()
        {
            int off, len;
            ReadLengthDelimited(out off, out len);
            var r = new byte[len];
            Buffer.BlockCopy(_b, off, r, 0, len);
            return r;
        }

        public string ReadString()
        {
            int off, len;
            ReadLengthDelimited(out off, out len);
            return Encoding.UTF8.GetString(_b, off, len);
        }

        public void Skip(int wireType)
        {
            switch (wireType)
            {
                case 0: ReadVarint(); break;
                case 1: Advance(8); break;
                case 2: { int o, l; ReadLengthDelimited(out o, out l); break; }
                case 5: Advance(4); break;
                default: throw new ProtoFormatException("unsupported wire type " + wireType);
            }
        }

        void Advance(int n)
        {
            if (_end - _pos < n) throw new ProtoFormatException("truncated fixed field");
            _pos += n;
        }

        public static void Expect(int wireType, int expected, int field)
        {
            if (wireType != expected) throw new ProtoFormatException("field " + field + ": wire type " + wireType + ", expected " + expected);
        }
    }

    /// <summary>Writes proto3 wire format. Scalars equal to their default are omitted (proto3),
    /// except through the *Always methods used for oneof members and repeated elements.</summary>
    public sealed class ProtoWriter
    {
        readonly MemoryStream _s = new MemoryStream();

        public void WriteVarintRaw(ulong v)
        {
            while (v >= 0x80) { _s.WriteByte((byte)(v | 0x80)); v >>= 7; }
            _s.WriteByte((byte)v);
        }

        void Tag(int field, int wt) { WriteVarintRaw((ulong)((uint)field << 3 | (uint)wt)); }

        public void UInt64(int field, ulong v) { if (v != 0) { Tag(field, 0); WriteVarintRaw(v); } }
        public void UInt32(int field, uint v) { UInt64(field, v); }
        public void Enum(int field, int v) { if (v != 0) { Tag(field, 0); WriteVarintRaw((ulong)(long)v); } }
        public void Bool(int field, bool v) { if (v) { Tag(field, 0); WriteVarintRaw(1); } }
        public void SInt32(int field, int v) { if (v != 0) { Tag(field, 0); WriteVarintRaw((uint)((v << 1) ^ (v >> 31))); } }

        public void Bytes(int field, byte[] v) { if (v != null && v.Length > 0) BytesAlways(field, v); }
        public void BytesAlways(int field, byte[] v)
        {
            if (v == null) v = new byte[0];
            Tag(field, 2);
            WriteVarintRaw((ulong)v.Length);
            _s.Write(v, 0, v.Length);
        }

        public void String(int field, string v) { if (!string.IsNullOrEmpty(v)) StringAlways(field, v); }
        public void StringAlways(int field, string v) { BytesAlways(field, Encoding.UTF8.GetBytes(v ?? "")); }

        /// <summary>Writes a sub-message (always, even when empty: presence matters for messages).</summary>
        public void Message(int field, ProtoWriter sub) { BytesAlways(field, sub.ToArray()); }

        public byte[] ToArray() { return _s.ToArray(); }
    }
}
