using System;
using System.Runtime.InteropServices;

namespace Frameproof.Codec
{
    /// <summary>How fp-load ends once its work and its report
    /// are done. Mono 6.8 (Debian's) aborts its background threads at shutdown, and when the abort
    /// lands while the timer scheduler thread sorts its timers, Array.Sort wraps the abort into an
    /// InvalidOperationException that nothing catches: the process dies with "FATAL UNHANDLED
    /// EXCEPTION" and exit status 1 after a run that succeeded (mono/mono#15418, fixed in later Mono by
    /// mono/mono#15454 and #20467; the CI matrix at 5c4a475 failed one interop cell so). On Mono on Unix
    /// the process therefore ends with _exit(2), after flushing the console, skipping that shutdown;
    /// on .NET the code is returned from Main as usual.</summary>
    public static class ProcessExit
    {
        [DllImport("libc", EntryPoint = "_exit")]
        static extern void SysExit(int status);

        public static int Quit(int code)
        {
            try { Console.Out.Flush(); } catch (Exception) { }
            try { Console.Error.Flush(); } catch (Exception) { }
            if (Type.GetType("Mono.Runtime") != null && Environment.OSVersion.Platform == PlatformID.Unix)
            {
                try { SysExit(code); }
                catch (Exception) { }  // no libc to call: return as usual
            }
            return code;
        }
    }
}
