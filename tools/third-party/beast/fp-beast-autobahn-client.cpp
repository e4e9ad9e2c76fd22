// fp-beast-autobahn-client: the Autobahn testsuite's client protocol (reference-impls/README.md,
// "fp-autobahn-client") on Boost.Beast's websocket::stream in the client role, for
// `frameproof autobahn --client-cmd`:
//
//   fp-beast-autobahn-client --connect HOST:PORT --agent NAME [--cases all|N]
//
// GET /getCaseCount (one text message: the count), then for each case GET /runCase?case=I&agent=NAME,
// echoing every text and binary message back with its opcode (stream::read, stream::text, stream::write)
// until the connection ends, then GET /updateReports?agent=NAME. No compression, read_message_max
// 64 MiB + 1 KiB (the contract: no message size limit below 64 MiB). Masking, UTF-8, pings and the close
// handshake are Beast's own. Synchronous and single-threaded: one case at a time, as Autobahn runs them.
// Exit 0 when every case ran (the verdicts are Autobahn's, read by `frameproof autobahn`).
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>

#include "../common/autobahn_client_args.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;

static const char* kUsage = "usage: fp-beast-autobahn-client --connect HOST:PORT --agent NAME [--cases all|N]";
static const std::size_t kLimit = (64u << 20) + 1024;

struct Target {
    std::string host, port;
};

// A connected, upgraded client stream for `path`; throws beast::system_error on failure.
static void open(websocket::stream<beast::tcp_stream>& ws, asio::io_context& ioc, const Target& t,
                 const std::string& path) {
    tcp::resolver resolver(ioc);
    beast::get_lowest_layer(ws).expires_after(std::chrono::seconds(10));
    beast::get_lowest_layer(ws).connect(resolver.resolve(t.host, t.port));
    beast::get_lowest_layer(ws).socket().set_option(tcp::no_delay(true));
    ws.read_message_max(kLimit);
    ws.auto_fragment(false);
    ws.handshake(t.host + ":" + t.port, path);
    // bounded: a case that stalls ends after 120 s without progress
    beast::get_lowest_layer(ws).expires_after(std::chrono::seconds(120));
}

int main(int argc, char** argv) {
    const fp_autobahn::Args args = fp_autobahn::parse(argc, argv, kUsage);
    const std::string& connect = args.connect;
    const std::string& q = args.agent_query;
    auto colon = connect.rfind(':');
    if (colon == std::string::npos) fp_autobahn::usage_error(kUsage, "--connect " + connect + ": HOST:PORT");
    Target t{connect.substr(0, colon), connect.substr(colon + 1)};
    if (!t.host.empty() && t.host.front() == '[' && t.host.back() == ']') t.host = t.host.substr(1, t.host.size() - 2);
    asio::io_context ioc;

    std::size_t count = 0;
    try {
        websocket::stream<beast::tcp_stream> ws(ioc);
        open(ws, ioc, t, "/getCaseCount");
        beast::flat_buffer buf;
        ws.read(buf);
        count = std::stoul(beast::buffers_to_string(buf.data()));
        beast::error_code ec;
        ws.close(websocket::close_code::normal, ec);
    } catch (const std::exception& e) {
        std::cerr << "fp-beast-autobahn-client: getCaseCount: " << e.what() << "\n";
        return 1;
    }
    if (args.cases >= 0) count = std::min<std::size_t>(count, static_cast<std::size_t>(args.cases));
    for (std::size_t i = 1; i <= count; i++) {
        try {
            websocket::stream<beast::tcp_stream> ws(ioc);
            open(ws, ioc, t, "/runCase?case=" + std::to_string(i) + "&agent=" + q);
            beast::flat_buffer buf;
            for (;;) {
                beast::error_code ec;
                ws.read(buf, ec);
                if (ec) break;  // closed (Beast completed the close handshake) or failed
                ws.text(ws.got_text());
                ws.write(buf.data(), ec);
                if (ec) break;
                buf.consume(buf.size());
            }
        } catch (const std::exception& e) {
            std::cerr << "fp-beast-autobahn-client: case " << i << ": " << e.what() << "\n";
        }
    }
    try {
        websocket::stream<beast::tcp_stream> ws(ioc);
        open(ws, ioc, t, "/updateReports?agent=" + q);  // the reports are written on this request
        // then a close; the server may close or reset first, which ends it as well
        beast::error_code ec;
        ws.close(websocket::close_code::normal, ec);
        beast::flat_buffer buf;
        while (!ec) ws.read(buf, ec);  // until Beast sees the server's close
    } catch (const std::exception& e) {
        std::cerr << "fp-beast-autobahn-client: updateReports: " << e.what() << "\n";
        return 1;
    }
    return 0;
}
