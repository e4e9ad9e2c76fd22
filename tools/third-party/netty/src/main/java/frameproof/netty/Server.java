package frameproof.netty;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandler.Sharable;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.DecoderException;
import io.netty.handler.codec.LengthFieldBasedFrameDecoder;
import io.netty.handler.codec.LengthFieldPrepender;
import io.netty.util.ReferenceCountUtil;
import java.net.InetSocketAddress;
import java.nio.ByteOrder;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * fp-netty-server: frameproof's echo-server contract (reference-impls/README.md, "fp-server") for the
 * length-field protocol (spec/length-field.md) around Netty's LengthFieldBasedFrameDecoder and
 * LengthFieldPrepender, codecs nobody in this project wrote. The glue maps the profile onto the decoder's
 * constructor, echoes each decoded payload through the prepender and counts; framing, limits and the
 * stream's end are Netty's. A profile Netty's decoder cannot express is a usage error (exit 2).
 */
public final class Server {
    static final String USAGE =
        "fp-netty-server (--codec JSON | --protocol length-field) --listen HOST:PORT [--threads N]";
    /** LF-LIM-1's default maximum payload (spec/length-field.md): 10 MiB. */
    static final long DEFAULT_MAX_PAYLOAD = 10L * 1024 * 1024;

    static final AtomicLong CONNECTIONS = new AtomicLong();
    static final AtomicLong FRAMES = new AtomicLong();
    static final AtomicLong BYTES = new AtomicLong();
    static final AtomicLong PROTOCOL_ERRORS = new AtomicLong();

    static final class UsageError extends RuntimeException {
        UsageError(String msg) {
            super(msg);
        }
    }

    /** A length-field profile in the terms of Netty's decoder. */
    record Profile(int offset, int length, ByteOrder order, int maxFrameLength) {}

    static Profile profile(String json) {
        JsonObject v;
        try {
            v = JsonParser.parseString(json).getAsJsonObject();
        } catch (RuntimeException e) {
            throw new UsageError("--codec: not a JSON object: " + e.getMessage());
        }
        for (String k : v.keySet()) {
            if (!Set.of("protocol", "limits", "length_field").contains(k)) {
                throw new UsageError("--codec: unknown key " + k);
            }
        }
        JsonElement proto = v.get("protocol");
        if (proto == null || !proto.isJsonPrimitive() || !"length-field".equals(proto.getAsString())) {
            throw new UsageError("this server speaks length-field only");
        }
        long offset = 0, size = 2, max = 0;
        JsonObject lf = object(v, "length_field");
        if (lf != null) {
            for (String k : lf.keySet()) {
                if (!Set.of("offset", "size").contains(k)) {
                    throw new UsageError("--codec: unknown key length_field." + k);
                }
            }
            offset = integer(lf, "offset", 0);
            size = integer(lf, "size", 2);
        }
        JsonObject limits = object(v, "limits");
        if (limits != null) {
            max = integer(limits, "max_payload", 0);
        }
        if (offset < 0) {
            throw new UsageError("--codec: length_field.offset is negative");
        }
        int length;
        ByteOrder order;
        if (size == 1 || size == 2 || size == 4) {
            length = (int) size;
            order = ByteOrder.LITTLE_ENDIAN;
        } else if (size == -2 || size == -4) {
            length = (int) -size;
            order = ByteOrder.BIG_ENDIAN;
        } else if (size == 0) {
            throw new UsageError("size 0 (LEB128 varint length): LengthFieldBasedFrameDecoder reads a fixed-width "
                + "length field only (1, 2, 3, 4 or 8 bytes)");
        } else {
            throw new UsageError("size " + size + " is not a length-field profile (LF-FMT-3)");
        }
        if (max == 0) {
            max = DEFAULT_MAX_PAYLOAD;
        }
        // Netty's maxFrameLength bounds the whole frame: header bytes, length field and payload
        // (LengthFieldBasedFrameDecoder compares length + lengthAdjustment + lengthFieldEndOffset).
        long frame = max + offset + length;
        if (frame > Integer.MAX_VALUE) {
            throw new UsageError("limits.max_payload " + max + " with offset " + offset
                + ": Netty's maxFrameLength is an int (at most 2^31-1 for the whole frame)");
        }
        return new Profile((int) offset, length, order, (int) frame);
    }

    static JsonObject object(JsonObject v, String key) {
        JsonElement e = v.get(key);
        if (e == null || e.isJsonNull()) {
            return null;
        }
        if (!e.isJsonObject()) {
            throw new UsageError("--codec: " + key + " is not an object");
        }
        return e.getAsJsonObject();
    }

    static long integer(JsonObject v, String key, long dflt) {
        JsonElement e = v.get(key);
        if (e == null || e.isJsonNull()) {
            return dflt;
        }
        try {
            double d = e.getAsDouble();
            long n = e.getAsLong();
            if (d != n) {
                throw new NumberFormatException();
            }
            return n;
        } catch (RuntimeException x) {
            throw new UsageError("--codec: " + key + " is not an integer");
        }
    }

    /**
     * The echo service: each payload the decoder delivers goes back, in order, through the prepender.
     * A decoder exception closes the connection after the replies already written (LF-ECHO-2), as
     * Netty's own examples close on exceptionCaught; a half-close gets its replies, then the close
     * (LF-ECHO-3, with ALLOW_HALF_CLOSURE). Replies beyond the channel's write buffer water mark
     * stop reading until they drain, as Netty's documentation has a handler do with isWritable().
     */
    @Sharable
    static final class Echo extends ChannelInboundHandlerAdapter {
        /** The profile's header: written as zeros before each reply's length field (LF-FMT-4). */
        final ByteBuf header;

        Echo(int offset) {
            header = Unpooled.unreleasableBuffer(Unpooled.directBuffer(offset).writeZero(offset));
        }

        @Override
        public void channelActive(ChannelHandlerContext ctx) {
            CONNECTIONS.incrementAndGet();
            ctx.fireChannelActive();
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            if (!(msg instanceof ByteBuf payload)) {
                ReferenceCountUtil.release(msg);
                return;
            }
            FRAMES.incrementAndGet();
            BYTES.addAndGet(payload.readableBytes());
            if (header.isReadable()) {
                // straight to the socket from the pipeline's first context, ahead of what
                // LengthFieldPrepender writes next (it writes the length field and the payload as two buffers)
                ctx.pipeline().firstContext().write(header.duplicate());
            }
            ctx.write(payload);
            if (!ctx.channel().isWritable()) {
                // Netty's own back-pressure: past the write buffer's high water mark, push the replies
                // out and stop reading until the peer has taken them (channelWritabilityChanged). Reading
                // stops before the flush: a flush that drains everything fires the writability event itself
                ctx.channel().config().setAutoRead(false);
                ctx.flush();
                if (ctx.channel().isWritable()) {
                    ctx.channel().config().setAutoRead(true);
                }
            }
        }

        @Override
        public void channelWritabilityChanged(ChannelHandlerContext ctx) {
            if (ctx.channel().isWritable()) {
                ctx.channel().config().setAutoRead(true);
            }
            ctx.fireChannelWritabilityChanged();
        }

        @Override
        public void channelReadComplete(ChannelHandlerContext ctx) {
            ctx.flush();
        }

        @Override
        public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
            if (evt instanceof ChannelInputShutdownEvent) {
                // the decoder has delivered every complete frame before this event reaches here
                flushThenClose(ctx);
            }
            ReferenceCountUtil.release(evt);
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            if (cause instanceof DecoderException) {
                PROTOCOL_ERRORS.incrementAndGet();
            }
            flushThenClose(ctx);
        }

        /**
         * Closes once every reply written so far has gone out. The empty buffer is written from the
         * pipeline's first context (the decoder's), so that it bypasses LengthFieldPrepender, which
         * would frame it as an empty payload.
         */
        static void flushThenClose(ChannelHandlerContext ctx) {
            ctx.flush();
            ctx.pipeline().firstContext().writeAndFlush(Unpooled.EMPTY_BUFFER).addListener(ChannelFutureListener.CLOSE);
        }
    }

    static UsageError usage(String msg) {
        return new UsageError(msg);
    }

    public static void main(String[] argv) throws Exception {
        String listen = null, codec = null;
        int threads = Runtime.getRuntime().availableProcessors();
        Profile p;
        String host;
        int port;
        try {
            for (int i = 0; i < argv.length; i++) {
                String a = argv[i];
                if (a.equals("--help") || a.equals("-h")) {
                    System.out.println("usage: " + USAGE);
                    System.exit(0);
                }
                if (!Set.of("--listen", "--codec", "--protocol", "--threads").contains(a)) {
                    throw usage("unknown argument " + a);
                }
                if (i + 1 >= argv.length) {
                    throw usage(a + " needs a value");
                }
                String val = argv[++i];
                switch (a) {
                    case "--listen" -> listen = val;
                    case "--codec" -> codec = val;
                    case "--protocol" -> {
                        if (!val.equals("length-field")) {
                            throw usage("this server speaks length-field only");
                        }
                        codec = "{\"protocol\": \"length-field\"}";
                    }
                    default -> {
                        try {
                            threads = Integer.parseInt(val);
                        } catch (NumberFormatException e) {
                            threads = 0;
                        }
                        if (threads <= 0) {
                            throw usage("--threads: a positive integer");
                        }
                    }
                }
            }
            if (listen == null) {
                throw usage("--listen is required");
            }
            if (codec == null) {
                throw usage("--codec or --protocol is required");
            }
            p = profile(codec);
            int colon = listen.lastIndexOf(':');
            if (colon < 0) {
                throw usage("--listen: HOST:PORT");
            }
            host = listen.substring(0, colon);
            try {
                port = Integer.parseInt(listen.substring(colon + 1));
            } catch (NumberFormatException e) {
                port = -1;
            }
            if (port < 0 || port > 65535) {
                throw usage("--listen: bad port");
            }
        } catch (UsageError e) {
            System.err.println("usage error: " + e.getMessage());
            System.err.println("usage: " + USAGE);
            System.exit(2);
            return;
        }
        serve(p, host, port, threads);
    }

    static void serve(Profile p, String host, int port, int threads) throws InterruptedException {
        // Netty logs an accept failure (EMFILE) through java.util.logging, whose formatter loads the JDK's
        // time-zone file on first use: with no descriptor left that load throws an Error that ends the
        // accepting event loop (measured, descriptor_exhaustion). One record logged here (to stderr), while
        // descriptors are free, loads it.
        java.util.logging.Logger.getLogger("frameproof.netty").info("fp-netty-server: " + p);
        EventLoopGroup boss = new NioEventLoopGroup(1);
        EventLoopGroup workers = new NioEventLoopGroup(threads);
        Echo echo = new Echo(p.offset());
        ServerBootstrap b = new ServerBootstrap()
            .group(boss, workers)
            .channel(NioServerSocketChannel.class)
            .childOption(ChannelOption.TCP_NODELAY, true)
            .childOption(ChannelOption.ALLOW_HALF_CLOSURE, true)
            .childHandler(new ChannelInitializer<SocketChannel>() {
                @Override
                protected void initChannel(SocketChannel ch) {
                    // decoder: skip the header bytes and the length field, deliver the payload alone;
                    // failFast: refuse an oversize length as soon as the field is read (LF-LIM-1)
                    ch.pipeline().addLast(
                        new LengthFieldBasedFrameDecoder(p.order(), p.maxFrameLength(), p.offset(), p.length(),
                                                         0, p.offset() + p.length(), true));
                    ch.pipeline().addLast(new LengthFieldPrepender(p.order(), p.length(), 0, false));
                    ch.pipeline().addLast(echo);
                }
            });
        Channel server;
        try {
            server = b.bind(new InetSocketAddress(host, port)).sync().channel();
        } catch (Exception e) {
            System.err.println("fp-netty-server: cannot listen on " + host + ":" + port + ": " + e);
            System.exit(1);
            return;
        }
        InetSocketAddress addr = (InetSocketAddress) server.localAddress();
        System.out.println("LISTENING " + addr.getAddress().getHostAddress() + ":" + addr.getPort());
        System.out.flush();
        // SIGTERM/SIGINT run the JVM's shutdown hooks: stop accepting, close the connections, print the
        // counters, and end with status 0 (halt: a hook's exit would otherwise be 128 + the signal)
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            server.close().awaitUninterruptibly(1000);
            boss.shutdownGracefully(0, 1, TimeUnit.SECONDS).awaitUninterruptibly(2000);
            workers.shutdownGracefully(0, 1, TimeUnit.SECONDS).awaitUninterruptibly(2000);
            System.out.println("{\"connections\": " + CONNECTIONS.get() + ", \"frames\": " + FRAMES.get()
                + ", \"bytes\": " + BYTES.get() + ", \"protocol_errors\": " + PROTOCOL_ERRORS.get() + "}");
            System.out.flush();
            Runtime.getRuntime().halt(0);
        }));
        server.closeFuture().sync();
    }
}
