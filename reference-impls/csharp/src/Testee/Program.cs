using System;
using System.IO;

namespace Frameproof.Testee
{
    /// <summary>fp-testee: u32 LE length-prefixed TesteeRequest on stdin, TesteeResponse on stdout.</summary>
    public static class Program
    {
        const int MaxMessage = 512 * 1024 * 1024;

        public static int Main(string[] args)
        {
            Stream input = Console.OpenStandardInput();
            Stream output = Console.OpenStandardOutput();
            var len = new byte[4];
            while (true)
            {
                int got = ReadFull(input, len, 4);
                if (got == 0) return 0;                       // EOF between messages: done
                if (got < 4) { Console.Error.WriteLine("fp-testee: truncated length prefix"); return 1; }
                uint n = BitConverter.ToUInt32(len, 0);
                if (!BitConverter.IsLittleEndian) n = (n >> 24) | ((n >> 8) & 0xFF00) | ((n << 8) & 0xFF0000) | (n << 24);
                if (n > MaxMessage) { Console.Error.WriteLine("fp-testee: message of " + n + " bytes refused"); return 1; }
                var msg = new byte[n];
                if (ReadFull(input, msg, (int)n) < n) { Console.Error.WriteLine("fp-testee: truncated message"); return 1; }

                TesteeResponseMsg resp;
                try
                {
                    resp = TesteeService.Handle(TesteeRequestMsg.Parse(msg));
                }
                catch (Exception e)
                {
                    resp = new TesteeResponseMsg { Kind = ResponseKind.RuntimeError, Text = "bad request: " + e.Message };
                }
                byte[] body = resp.ToBytes();
                uint bl = (uint)body.Length;
                var prefix = new byte[] { (byte)bl, (byte)(bl >> 8), (byte)(bl >> 16), (byte)(bl >> 24) };
                output.Write(prefix, 0, 4);
                output.Write(body, 0, body.Length);
                output.Flush();
            }
        }

        static int ReadFull(Stream s, byte[] buf, int count)
        {
            int off = 0;
            while (off < count)
            {
                int n = s.Read(buf, off, count - off);
                if (n <= 0) break;
                off += n;
            }
            return off;
        }
    }
}
