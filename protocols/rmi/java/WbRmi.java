// wirebench Java RMI benchmark pair: WbRmiServer and WbRmiClient, plus the shared
// remote interface WbEcho and helpers in WbRmi. Plain JDK, Java 17 source.
//
// Build:  javac -d OUT WbRmi.java
// Run:    java -cp OUT WbRmiServer --listen 127.0.0.1:0
//         java -cp OUT WbRmiClient --server 127.0.0.1:PORT --workload pingpong --payload 100
// See README.md next to this file for the flags and the JSON the client prints.

import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteOrder;
import java.rmi.NotBoundException;
import java.rmi.Remote;
import java.rmi.RemoteException;
import java.rmi.registry.LocateRegistry;
import java.rmi.registry.Registry;
import java.rmi.server.RMIServerSocketFactory;
import java.rmi.server.RMISocketFactory;
import java.rmi.server.UnicastRemoteObject;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/** The remote interface, bound as "wb" in the server's registry. */
interface WbEcho extends Remote {
    /** Checks body against the pattern for seq, waits the server's think time, returns body. */
    byte[] echo(long seq, byte[] body) throws RemoteException;

    /** Checks and counts body; returns nothing (still a synchronous RMI call on the wire). */
    void sink(long seq, byte[] body) throws RemoteException;

    /** {messages, bytes, lastReceiveNanos (server System.nanoTime), badMessages} since reset. */
    long[] stats() throws RemoteException;

    /** Zeroes the counters. */
    void reset() throws RemoteException;
}

/** Shared helpers: payload pattern, argument parsing, error text. */
public final class WbRmi {
    private WbRmi() {}

    static final String BIND_NAME = "wb";
    static final long GOLDEN = 0x9E3779B97F4A7C15L;

    // ---------------------------------------------------------------------------------
    // Payload pattern (identical on both sides).
    //
    //   base(seed, seq) = seed ^ (seq * 0x9E3779B97F4A7C15)          (64-bit wrapping)
    //   word(b)         = splitmix64(base + b)       for block b = 0, 1, 2, ...
    //   byte i          = (byte) (word(i / 8) >>> (8 * (i % 8)))
    //
    // i.e. each 8-byte block is the little-endian encoding of word(b); the last block is
    // truncated to the message length. splitmix64(x):
    //   z = x + 0x9E3779B97F4A7C15
    //   z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9
    //   z = (z ^ (z >>> 27)) * 0x94D049BB133111EB
    //   return z ^ (z >>> 31)
    // (all arithmetic modulo 2^64, >>> is a logical shift).
    // ---------------------------------------------------------------------------------

    private static final VarHandle LE_LONG =
            MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);

    static long splitmix64(long x) {
        long z = x + GOLDEN;
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    static long base(long seed, long seq) {
        return seed ^ (seq * GOLDEN);
    }

    /** The body of message seq, len bytes long. */
    static byte[] payload(long seed, long seq, int len) {
        byte[] out = new byte[len];
        long base = base(seed, seq);
        int full = len >>> 3;
        for (int b = 0; b < full; b++) {
            LE_LONG.set(out, b << 3, splitmix64(base + b));
        }
        int off = full << 3;
        if (off < len) {
            long w = splitmix64(base + full);
            for (int i = off; i < len; i++, w >>>= 8) {
                out[i] = (byte) w;
            }
        }
        return out;
    }

    /** Whether body is exactly the pattern for (seed, seq, body.length); no allocation. */
    static boolean matches(long seed, long seq, byte[] body) {
        if (body == null) {
            return false;
        }
        int len = body.length;
        long base = base(seed, seq);
        int full = len >>> 3;
        for (int b = 0; b < full; b++) {
            if ((long) LE_LONG.get(body, b << 3) != splitmix64(base + b)) {
                return false;
            }
        }
        int off = full << 3;
        if (off < len) {
            long w = splitmix64(base + full);
            for (int i = off; i < len; i++, w >>>= 8) {
                if (body[i] != (byte) w) {
                    return false;
                }
            }
        }
        return true;
    }

    // ---------------------------------------------------------------------------------
    // Arguments.
    // ---------------------------------------------------------------------------------

    /** A bad command line: one line on stderr, exit 2. */
    static final class UsageError extends Exception {
        private static final long serialVersionUID = 1L;

        UsageError(String msg) {
            super(msg);
        }
    }

    /** --flag value and --flag=value, each flag at most once, only the allowed ones. */
    static Map<String, String> parseFlags(String[] argv, Set<String> allowed) throws UsageError {
        Map<String, String> out = new HashMap<>();
        for (int i = 0; i < argv.length; i++) {
            String a = argv[i];
            if (!a.startsWith("--") || a.length() == 2) {
                throw new UsageError("unexpected argument '" + a + "'");
            }
            String name;
            String value;
            int eq = a.indexOf('=');
            if (eq >= 0) {
                name = a.substring(2, eq);
                value = a.substring(eq + 1);
            } else {
                name = a.substring(2);
                if (i + 1 >= argv.length) {
                    throw new UsageError("--" + name + " needs a value");
                }
                value = argv[++i];
            }
            if (!allowed.contains(name)) {
                throw new UsageError("unknown flag --" + name);
            }
            if (out.put(name, value) != null) {
                throw new UsageError("--" + name + " given twice");
            }
        }
        return out;
    }

    /** A non-negative decimal integer in [min, max]. */
    static long parseCount(String flag, String v, long min, long max) throws UsageError {
        long n;
        try {
            n = Long.parseLong(v.trim());
        } catch (NumberFormatException e) {
            throw new UsageError("--" + flag + " must be an integer, got '" + v + "'");
        }
        if (n < min || n > max) {
            throw new UsageError("--" + flag + " must be between " + min + " and " + max + ", got " + n);
        }
        return n;
    }

    /** A 64-bit seed: decimal (signed or unsigned) or 0x-prefixed hex. */
    static long parseSeed(String v) throws UsageError {
        String s = v.trim();
        try {
            if (s.startsWith("0x") || s.startsWith("0X")) {
                return Long.parseUnsignedLong(s.substring(2), 16);
            }
            if (s.startsWith("-")) {
                return Long.parseLong(s);
            }
            return Long.parseUnsignedLong(s);
        } catch (NumberFormatException e) {
            throw new UsageError("--seed must be a 64-bit integer, got '" + v + "'");
        }
    }

    /** HOST:PORT, HOST may be [v6-literal]. Returns {host, port}. */
    static Object[] parseHostPort(String flag, String v) throws UsageError {
        int colon = v.lastIndexOf(':');
        if (colon <= 0 || colon == v.length() - 1) {
            throw new UsageError("--" + flag + " must be HOST:PORT, got '" + v + "'");
        }
        String host = v.substring(0, colon);
        if (host.startsWith("[") && host.endsWith("]")) {
            host = host.substring(1, host.length() - 1);
        }
        if (host.isEmpty()) {
            throw new UsageError("--" + flag + " must be HOST:PORT, got '" + v + "'");
        }
        long port;
        try {
            port = Long.parseLong(v.substring(colon + 1));
        } catch (NumberFormatException e) {
            throw new UsageError("--" + flag + ": bad port in '" + v + "'");
        }
        if (port < 0 || port > 65535) {
            throw new UsageError("--" + flag + ": port out of range in '" + v + "'");
        }
        return new Object[] {host, (int) port};
    }

    /** HOST:PORT with a v6 literal bracketed, for messages. */
    static String hostPort(String host, int port) {
        return (host.indexOf(':') >= 0 ? "[" + host + "]" : host) + ":" + port;
    }

    /** The innermost cause as "message" (or the class name if it has none). */
    static String rootCause(Throwable t) {
        Throwable r = t;
        while (r.getCause() != null && r.getCause() != r) {
            r = r.getCause();
        }
        String m = r.getMessage();
        if (r instanceof java.io.EOFException) {
            return "connection closed by the peer (EOFException)";
        }
        if (m == null || m.isEmpty()) {
            // Use the nearest wrapper's own text, e.g. "error unmarshalling return (X)".
            for (Throwable w = t; w != null && w != r; w = w.getCause()) {
                String wm = w.getMessage();
                if (wm != null && !wm.isEmpty()) {
                    int cut = wm.indexOf("; nested exception is");
                    wm = (cut >= 0 ? wm.substring(0, cut) : wm).replace('\n', ' ').replace('\r', ' ');
                    return wm + " (" + r.getClass().getSimpleName() + ")";
                }
            }
            return r.getClass().getSimpleName();
        }
        m = m.replace('\n', ' ').replace('\r', ' ');
        if (r instanceof java.net.UnknownHostException) {
            return "unknown host " + m;
        }
        if (r instanceof java.net.SocketTimeoutException) {
            return m + " (" + r.getClass().getSimpleName() + ")";
        }
        return m;
    }

    /** One line on stderr, then exit. */
    static void die(int status, String prog, String msg) {
        System.out.flush();
        System.err.println(prog + ": " + msg);
        System.err.flush();
        Runtime.getRuntime().halt(status);
    }

    public static void main(String[] args) {
        System.err.println("use WbRmiServer or WbRmiClient (see README.md)");
        System.exit(2);
    }
}

/** A server socket factory bound to one address; equal instances share an RMI port. */
final class WbBoundServerSocketFactory implements RMIServerSocketFactory {
    private final InetAddress addr;

    WbBoundServerSocketFactory(InetAddress addr) {
        this.addr = addr;
    }

    @Override
    public ServerSocket createServerSocket(int port) throws IOException {
        return new ServerSocket(port, 128, addr);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof WbBoundServerSocketFactory
                && ((WbBoundServerSocketFactory) o).addr.equals(addr);
    }

    @Override
    public int hashCode() {
        return addr.hashCode();
    }
}

/** The remote object. */
final class WbEchoImpl implements WbEcho {
    private final long seed;
    private final long thinkNs;
    private final AtomicLong messages = new AtomicLong();
    private final AtomicLong bytes = new AtomicLong();
    private final AtomicLong lastReceive = new AtomicLong();
    private final AtomicLong bad = new AtomicLong();

    WbEchoImpl(long seed, long thinkNs) {
        this.seed = seed;
        this.thinkNs = thinkNs;
    }

    private void count(long seq, byte[] body) {
        lastReceive.set(System.nanoTime());
        messages.incrementAndGet();
        bytes.addAndGet(body == null ? 0 : body.length);
        if (!WbRmi.matches(seed, seq, body)) {
            bad.incrementAndGet();
        }
    }

    /** Waits thinkNs: parks for all but the last ~100 us, then spins for precision. */
    private void think() {
        if (thinkNs <= 0) {
            return;
        }
        long deadline = System.nanoTime() + thinkNs;
        long left;
        while ((left = deadline - System.nanoTime()) > 200_000L) {
            LockSupport.parkNanos(left - 100_000L);
        }
        while (deadline - System.nanoTime() > 0) {
            Thread.onSpinWait();
        }
    }

    @Override
    public byte[] echo(long seq, byte[] body) {
        count(seq, body);
        think();
        return body;
    }

    @Override
    public void sink(long seq, byte[] body) {
        count(seq, body);
    }

    @Override
    public long[] stats() {
        return new long[] {messages.get(), bytes.get(), lastReceive.get(), bad.get()};
    }

    @Override
    public void reset() {
        messages.set(0);
        bytes.set(0);
        lastReceive.set(0);
        bad.set(0);
    }
}

/**
 * java -cp OUT WbRmiServer --listen HOST:PORT [--think-ns N] [--seed S]
 *
 * Registry and object share PORT, bound to HOST only. Prints "ready PORT" once bound and
 * runs until stdin reaches EOF or SIGTERM/SIGINT (exit 0).
 */
final class WbRmiServer {
    private static final String PROG = "WbRmiServer";

    // Strong references so the exported object and registry are never collected.
    @SuppressWarnings("unused")
    private static Object keepObj;
    @SuppressWarnings("unused")
    private static Object keepRegistry;

    public static void main(String[] argv) {
        String host;
        int port;
        long think = 0;
        long seed = 0;
        try {
            Map<String, String> f = WbRmi.parseFlags(argv, Set.of("listen", "think-ns", "seed"));
            if (!f.containsKey("listen")) {
                throw new WbRmi.UsageError("--listen HOST:PORT is required");
            }
            Object[] hp = WbRmi.parseHostPort("listen", f.get("listen"));
            host = (String) hp[0];
            port = (Integer) hp[1];
            if (f.containsKey("think-ns")) {
                think = WbRmi.parseCount("think-ns", f.get("think-ns"), 0, 3_600_000_000_000L);
            }
            if (f.containsKey("seed")) {
                seed = WbRmi.parseSeed(f.get("seed"));
            }
        } catch (WbRmi.UsageError e) {
            WbRmi.die(2, PROG, e.getMessage()
                    + " (usage: WbRmiServer --listen HOST:PORT [--think-ns N] [--seed S])");
            return;
        }

        String where = WbRmi.hostPort(host, port);
        InetAddress addr;
        try {
            addr = InetAddress.getByName(host);
        } catch (IOException e) {
            WbRmi.die(1, PROG, "cannot resolve listen host " + host + ": " + WbRmi.rootCause(e));
            return;
        }
        if (port == 0) {
            try (ServerSocket probe = new ServerSocket(0, 1, addr)) {
                port = probe.getLocalPort();
            } catch (IOException e) {
                WbRmi.die(1, PROG, "cannot find a free port on " + host + ": " + WbRmi.rootCause(e));
                return;
            }
            where = WbRmi.hostPort(host, port);
        }

        // Stubs handed out by this JVM name HOST as the server's address.
        System.setProperty("java.rmi.server.hostname", host);

        WbBoundServerSocketFactory ssf = new WbBoundServerSocketFactory(addr);
        try {
            WbEchoImpl impl = new WbEchoImpl(seed, think);
            Registry registry = LocateRegistry.createRegistry(port, null, ssf);
            Remote stub = UnicastRemoteObject.exportObject(impl, port, null, ssf);
            registry.bind(WbRmi.BIND_NAME, stub);
            keepObj = impl;
            keepRegistry = registry;
        } catch (Exception e) {
            WbRmi.die(1, PROG, "cannot serve RMI on " + where + ": " + WbRmi.rootCause(e));
            return;
        }

        // SIGTERM / SIGINT run the shutdown hooks; halting from one makes the exit status 0.
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            System.out.flush();
            Runtime.getRuntime().halt(0);
        }, "wb-exit"));

        PrintStream out = System.out;
        out.println("ready " + port);
        out.flush();

        // Run until stdin reaches EOF (or a read error, treated the same).
        InputStream in = System.in;
        byte[] buf = new byte[256];
        try {
            while (in.read(buf) >= 0) {
                // discard
            }
        } catch (IOException ignored) {
            // stdin gone
        }
        System.exit(0);
    }
}

/**
 * java -cp OUT WbRmiClient --server HOST:PORT --workload pingpong|stream [--mode oneway|echo]
 *      --payload BYTES [--rounds N] [--count N] [--duration-ms N] [--seed S] [--timeout-ms N]
 *
 * Prints one JSON line on stdout; on failure one line on stderr and exit 1 (2 for bad args).
 */
final class WbRmiClient {
    private static final String PROG = "WbRmiClient";
    private static final String USAGE = "usage: WbRmiClient --server HOST:PORT --workload pingpong|stream"
            + " [--mode oneway|echo] --payload BYTES [--rounds N] [--count N] [--duration-ms N]"
            + " [--seed S] [--timeout-ms N]";

    /** Client sockets with a connect timeout (JDK 17 RMI has no connect-timeout property). */
    static final class TimeoutSocketFactory extends RMISocketFactory {
        private final int timeoutMs;

        TimeoutSocketFactory(int timeoutMs) {
            this.timeoutMs = timeoutMs;
        }

        @Override
        public Socket createSocket(String host, int port) throws IOException {
            Socket s = new Socket();
            try {
                s.connect(new InetSocketAddress(host, port), timeoutMs);
            } catch (IOException e) {
                s.close();
                throw e;
            }
            return s;
        }

        @Override
        public ServerSocket createServerSocket(int port) throws IOException {
            return new ServerSocket(port);
        }
    }

    /** A growable long array for RTTs. */
    static final class Longs {
        long[] a = new long[1024];
        int n;

        void add(long v) {
            if (n == a.length) {
                a = Arrays.copyOf(a, a.length * 2);
            }
            a[n++] = v;
        }
    }

    /** Names the call that failed, for the stderr line. */
    static final class CallFailed extends Exception {
        private static final long serialVersionUID = 1L;

        CallFailed(String msg, Throwable cause) {
            super(msg, cause);
        }
    }

    public static void main(String[] argv) {
        String host;
        int port;
        String workload;
        String mode;
        int payload;
        long rounds = 1000;
        long count = -1;
        long durationMs = -1;
        long seed = 0;
        int timeoutMs = 10_000;
        try {
            Map<String, String> f = WbRmi.parseFlags(argv, Set.of("server", "workload", "mode", "payload",
                    "rounds", "count", "duration-ms", "seed", "timeout-ms"));
            if (!f.containsKey("server")) {
                throw new WbRmi.UsageError("--server HOST:PORT is required");
            }
            Object[] hp = WbRmi.parseHostPort("server", f.get("server"));
            host = (String) hp[0];
            port = (Integer) hp[1];
            if (port == 0) {
                throw new WbRmi.UsageError("--server port must not be 0");
            }
            workload = f.get("workload");
            if (!"pingpong".equals(workload) && !"stream".equals(workload)) {
                throw new WbRmi.UsageError("--workload must be pingpong or stream");
            }
            if (!f.containsKey("payload")) {
                throw new WbRmi.UsageError("--payload BYTES is required");
            }
            payload = (int) WbRmi.parseCount("payload", f.get("payload"), 0, Integer.MAX_VALUE - 64);
            if ("pingpong".equals(workload)) {
                mode = "echo";
                if (f.containsKey("mode") && !"echo".equals(f.get("mode"))) {
                    throw new WbRmi.UsageError("--workload pingpong only supports --mode echo");
                }
                if (f.containsKey("count") || f.containsKey("duration-ms")) {
                    throw new WbRmi.UsageError("--count/--duration-ms are for --workload stream; use --rounds");
                }
                if (f.containsKey("rounds")) {
                    rounds = WbRmi.parseCount("rounds", f.get("rounds"), 1, Long.MAX_VALUE);
                }
            } else {
                mode = f.getOrDefault("mode", "oneway");
                if (!"oneway".equals(mode) && !"echo".equals(mode)) {
                    throw new WbRmi.UsageError("--mode must be oneway or echo");
                }
                if (f.containsKey("rounds")) {
                    throw new WbRmi.UsageError("--rounds is for --workload pingpong; use --count or --duration-ms");
                }
                if (f.containsKey("count")) {
                    count = WbRmi.parseCount("count", f.get("count"), 1, Long.MAX_VALUE);
                }
                if (f.containsKey("duration-ms")) {
                    durationMs = WbRmi.parseCount("duration-ms", f.get("duration-ms"), 1, Long.MAX_VALUE / 1_000_000L);
                }
                if (count < 0 && durationMs < 0) {
                    throw new WbRmi.UsageError("--workload stream needs --count or --duration-ms (or both)");
                }
            }
            if (f.containsKey("seed")) {
                seed = WbRmi.parseSeed(f.get("seed"));
            }
            if (f.containsKey("timeout-ms")) {
                timeoutMs = (int) WbRmi.parseCount("timeout-ms", f.get("timeout-ms"), 1, Integer.MAX_VALUE);
            }
        } catch (WbRmi.UsageError e) {
            WbRmi.die(2, PROG, e.getMessage() + " (" + USAGE + ")");
            return;
        }

        // Must be set before the RMI transport classes load (they read these once).
        String t = Integer.toString(timeoutMs);
        System.setProperty("sun.rmi.transport.tcp.responseTimeout", t);
        System.setProperty("sun.rmi.transport.tcp.handshakeTimeout", t);
        System.setProperty("sun.rmi.transport.tcp.connectTimeout", t); // not read by JDK 17; harmless
        try {
            RMISocketFactory.setSocketFactory(new TimeoutSocketFactory(timeoutMs));
        } catch (IOException e) {
            WbRmi.die(1, PROG, "cannot install the RMI socket factory: " + WbRmi.rootCause(e));
            return;
        }

        String where = WbRmi.hostPort(host, port);

        // Look-up: getRegistry makes no connection; lookup() connects, handshakes and calls.
        WbEcho wb;
        long lookupNs;
        try {
            long t0 = System.nanoTime();
            Registry reg = LocateRegistry.getRegistry(host, port);
            Remote r = reg.lookup(WbRmi.BIND_NAME);
            lookupNs = System.nanoTime() - t0;
            if (!(r instanceof WbEcho)) {
                WbRmi.die(1, PROG, "the object bound as \"" + WbRmi.BIND_NAME + "\" at " + where
                        + " is not a WbEcho (" + r.getClass().getName() + ")");
                return;
            }
            wb = (WbEcho) r;
        } catch (NotBoundException e) {
            WbRmi.die(1, PROG, "nothing is bound as \"" + WbRmi.BIND_NAME + "\" in the RMI registry at " + where);
            return;
        } catch (java.rmi.ConnectIOException e) {
            // TCP connected, but the JRMP handshake failed or timed out.
            WbRmi.die(1, PROG, "connected to " + where + " but got no RMI handshake (not an RMI server,"
                    + " or not answering): " + WbRmi.rootCause(e));
            return;
        } catch (java.rmi.ConnectException | java.rmi.UnknownHostException e) {
            WbRmi.die(1, PROG, "cannot reach the RMI registry at " + where + ": " + WbRmi.rootCause(e));
            return;
        } catch (Exception e) {
            WbRmi.die(1, PROG, "RMI registry lookup at " + where + " failed: " + WbRmi.rootCause(e));
            return;
        }

        StringBuilder json = new StringBuilder(256);
        try {
            try {
                wb.reset();
            } catch (RemoteException e) {
                throw new CallFailed("reset()", e);
            }

            long sent = 0;
            long received = 0;
            long corrupt = 0;
            Longs rtts = null;
            long elapsed;

            if ("pingpong".equals(workload) || "echo".equals(mode)) {
                rtts = new Longs();
                long limit = "pingpong".equals(workload) ? rounds : count;
                long start = System.nanoTime();
                long deadline = durationMs > 0 ? start + durationMs * 1_000_000L : 0;
                long end = start;
                for (long seq = 0; limit < 0 || seq < limit; seq++) {
                    if (durationMs > 0 && seq > 0 && end - deadline >= 0) {
                        break;
                    }
                    byte[] body = WbRmi.payload(seed, seq, payload);
                    byte[] reply;
                    long c0 = System.nanoTime();
                    try {
                        reply = wb.echo(seq, body);
                    } catch (RemoteException e) {
                        throw new CallFailed("echo() call #" + seq, e);
                    }
                    end = System.nanoTime();
                    rtts.add(end - c0);
                    sent++;
                    received++;
                    if (!Arrays.equals(reply, body)) {
                        corrupt++;
                    }
                }
                elapsed = end - start;
            } else {
                long start = System.nanoTime();
                long deadline = durationMs > 0 ? start + durationMs * 1_000_000L : 0;
                long end = start;
                for (long seq = 0; count < 0 || seq < count; seq++) {
                    if (durationMs > 0 && seq > 0 && end - deadline >= 0) {
                        break;
                    }
                    byte[] body = WbRmi.payload(seed, seq, payload);
                    try {
                        wb.sink(seq, body);
                    } catch (RemoteException e) {
                        throw new CallFailed("sink() call #" + seq, e);
                    }
                    end = System.nanoTime();
                    sent++;
                }
                elapsed = end - start;
            }

            long[] st;
            try {
                st = wb.stats();
            } catch (RemoteException e) {
                throw new CallFailed("stats()", e);
            }
            if (st == null || st.length < 4) {
                throw new CallFailed("stats()", new IllegalStateException("server returned a malformed stats array"));
            }
            if ("oneway".equals(mode)) {
                received = st[0];
                corrupt = st[3];
            }

            json.append("{\"workload\":\"").append(workload).append('"');
            json.append(",\"mode\":\"").append(mode).append('"');
            json.append(",\"payload\":").append(payload);
            json.append(",\"seed\":").append(Long.toUnsignedString(seed));
            json.append(",\"lookup_ns\":").append(lookupNs);
            json.append(",\"sent\":").append(sent);
            json.append(",\"received\":").append(received);
            json.append(",\"corrupt\":").append(corrupt);
            json.append(",\"elapsed_ns\":").append(elapsed);
            if (rtts != null) {
                json.append(",\"rtts_ns\":[");
                for (int i = 0; i < rtts.n; i++) {
                    if (i > 0) {
                        json.append(',');
                    }
                    json.append(rtts.a[i]);
                }
                json.append(']');
            }
            json.append(",\"server_messages\":").append(st[0]);
            json.append(",\"server_bytes\":").append(st[1]);
            json.append(",\"server_last_receive_ns\":").append(st[2]);
            json.append(",\"server_bad\":").append(st[3]);
            json.append('}');
        } catch (CallFailed e) {
            WbRmi.die(1, PROG, e.getMessage() + " to " + where + " failed: " + WbRmi.rootCause(e.getCause()));
            return;
        } catch (OutOfMemoryError e) {
            WbRmi.die(1, PROG, "out of memory (payload " + payload + " bytes); raise -Xmx");
            return;
        }

        System.out.println(json);
        System.out.flush();
        if (System.out.checkError()) {
            WbRmi.die(1, PROG, "cannot write the result to stdout");
        }
        // Don't wait for RMI's background threads (DGC lease renewal etc.).
        System.exit(0);
    }
}
