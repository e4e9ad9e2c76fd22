using System;

namespace Frameproof.Codec
{
    /// <summary>The oneofs of the testee messages (schemas/testee.proto) marked "one line per
    /// protocol": each protocol that has something to say there owns one member, with its own
    /// message and field number.</summary>
    public enum TesteeOneof
    {
        /// <summary><c>Codec.params</c>: the protocol's parameters (<see cref="CodecSpec.Params"/>).</summary>
        Params,
        /// <summary><c>Frame.header</c>: a frame's header beyond (flag, sequence, payload)
        /// (<see cref="FrameValue.Header"/>).</summary>
        Header,
        /// <summary><c>ProtocolError.detail</c>: what the protocol says on the wire about an error
        /// (<see cref="ProtocolError.Detail"/>).</summary>
        Detail,
    }

    /// <summary>One protocol's member of a <see cref="TesteeOneof"/>: its field number and its
    /// message, read into and written from the protocol's own object (e.g. the protocol's
    /// parameter object, the one <see cref="ProtocolModule.ParseParams"/> makes from the codec JSON).</summary>
    public abstract class TesteeMember
    {
        /// <summary>The member's field number in the oneof.</summary>
        public readonly int Field;

        protected TesteeMember(int field) { Field = field; }

        /// <summary>True if <paramref name="value"/> is an object of this member (of the protocol's type).</summary>
        public abstract bool Holds(object value);

        /// <summary>Reads the member's message into the protocol's object.</summary>
        public abstract object Read(ProtoReader r);

        /// <summary>Writes the fields of the member's message (the caller writes its tag and length).</summary>
        public abstract void Write(object value, ProtoWriter w);
    }

    /// <summary>A <see cref="TesteeMember"/> whose object is a <typeparamref name="T"/>.</summary>
    public sealed class TesteeMember<T> : TesteeMember
    {
        public delegate T Reader(ProtoReader r);
        public delegate void Writer(T value, ProtoWriter w);

        readonly Reader _read;
        readonly Writer _write;

        public TesteeMember(int field, Reader read, Writer write) : base(field)
        {
            _read = read;
            _write = write;
        }

        public override bool Holds(object value) { return value is T; }
        public override object Read(ProtoReader r) { return _read(r); }
        public override void Write(object value, ProtoWriter w) { _write((T)value, w); }
    }

    /// <summary>A protocol's members of all three oneofs under one field number (its line in each):
    /// params, header and error detail, each a message of the protocol's own type.</summary>
    public sealed class TesteeLine
    {
        readonly TesteeMember _params, _header, _detail;

        TesteeLine(TesteeMember parameters, TesteeMember header, TesteeMember detail)
        {
            _params = parameters;
            _header = header;
            _detail = detail;
        }

        /// <summary>The three members at field <paramref name="field"/>, each read and written by the
        /// given pair of methods.</summary>
        public static TesteeLine Of<TParams, THeader, TDetail>(int field,
            TesteeMember<TParams>.Reader readParams, TesteeMember<TParams>.Writer writeParams,
            TesteeMember<THeader>.Reader readHeader, TesteeMember<THeader>.Writer writeHeader,
            TesteeMember<TDetail>.Reader readDetail, TesteeMember<TDetail>.Writer writeDetail)
        {
            return new TesteeLine(new TesteeMember<TParams>(field, readParams, writeParams),
                new TesteeMember<THeader>(field, readHeader, writeHeader),
                new TesteeMember<TDetail>(field, readDetail, writeDetail));
        }

        /// <summary>The member of <paramref name="oneof"/>.</summary>
        public TesteeMember Member(TesteeOneof oneof)
        {
            switch (oneof)
            {
                case TesteeOneof.Params: return _params;
                case TesteeOneof.Header: return _header;
                case TesteeOneof.Detail: return _detail;
                default: return null;
            }
        }
    }

    public abstract partial class ProtocolModule
    {
        /// <summary>This protocol's member of a testee oneof (its line in schemas/testee.proto), or
        /// null if it has none there. The testee's messages find members through the
        /// <see cref="Registry"/>, by field number when reading and by object when writing.</summary>
        public virtual TesteeMember OneofMember(TesteeOneof oneof) { return null; }
    }
}
