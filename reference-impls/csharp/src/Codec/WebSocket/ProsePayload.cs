using System;

namespace Frameproof.Codec
{
    /// <summary>fp-load <c>--variant prose</c> (reference-impls/README.md): the payload of request
    /// <c>index</c> is its decimal digits, then " word" after " word", each of 64 common English words
    /// picked by the top six bits of splitmix64 of a state started at <c>index</c> (increased by
    /// 0x9E3779B97F4A7C15 before each draw), cut at the payload size: text about as compressible as
    /// prose (the benchmark's permessage-deflate rows), the same in every implementation (the Python
    /// reference's load.prose).</summary>
    public static class ProsePayload
    {
        static readonly byte[][] Words = MakeWords(
            "the of and to in is that it for was on are as with his they at be this from have or by one had " +
            "not but what all were when we there can an your which their said if do will each about how up " +
            "out them then she many some so these would other into has more her two like him see");

        static byte[][] MakeWords(string text)
        {
            string[] w = text.Split(' ');
            if (w.Length != 64) throw new InvalidOperationException("the prose word list must have 64 words");
            var o = new byte[64][];
            for (int i = 0; i < 64; i++) o[i] = System.Text.Encoding.ASCII.GetBytes(w[i]);
            return o;
        }

        /// <summary>The payload's bytes one after another.</summary>
        struct Cursor
        {
            readonly string _digits;
            int _at;          // digits written
            ulong _state;
            byte[] _word;     // the current word; null before the first
            int _k;           // its letters written

            public Cursor(long index)
            {
                _digits = ((ulong)index).ToString(System.Globalization.CultureInfo.InvariantCulture);
                _at = 0;
                _state = (ulong)index;
                _word = null;
                _k = 0;
            }

            public byte Next()
            {
                if (_at < _digits.Length) return (byte)_digits[_at++];
                if (_word == null || _k == _word.Length)
                {
                    _state = unchecked(_state + 0x9E3779B97F4A7C15UL);
                    ulong z = _state;
                    z = unchecked((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9UL);
                    z = unchecked((z ^ (z >> 27)) * 0x94D049BB133111EBUL);
                    z ^= z >> 31;
                    _word = Words[(int)(z >> 58)];
                    _k = 0;
                    return (byte)' ';
                }
                return _word[_k++];
            }
        }

        /// <summary>The payload of <c>index</c>, <c>dst.Length</c> bytes of it.</summary>
        public static void Fill(long index, Span<byte> dst)
        {
            var c = new Cursor(index);
            for (int i = 0; i < dst.Length; i++) dst[i] = c.Next();
        }

        /// <summary>Whether <c>payload</c> is exactly the payload of <c>index</c> of <c>length</c> bytes.</summary>
        public static bool Matches(long index, int length, ReadOnlySpan<byte> payload)
        {
            if (payload.Length != length) return false;
            var c = new Cursor(index);
            for (int i = 0; i < payload.Length; i++)
                if (payload[i] != c.Next()) return false;
            return true;
        }
    }
}
