// fp-websocketpp-server: frameproof's echo-server contract (reference-impls/README.md, "fp-server") around
// websocketpp, a WebSocket library nobody in this project wrote, on its Boost.Asio transport
// (websocketpp/config/asio_no_tls.hpp). The glue parses the contract's flags, selects the subprotocol and
// echoes each text and binary message with its opcode; framing, masking, limits, UTF-8, pings and the close
// handshake are the library's own (permessage-deflate is not offered: README). Used by `frameproof net`,
// `frameproof autobahn` and the benchmark as a third-party peer (impl.json).

#include <websocketpp/config/asio_no_tls.hpp>
#include <websocketpp/server.hpp>

#include <nlohmann/json.hpp>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace {

const char* const USAGE =
    "fp-websocketpp-server (--codec JSON | --protocol websocket) --listen HOST:PORT [--threads N]";
const char* const DEFAULT_SUBPROTOCOL = "frameproof.echo";

[[noreturn]] void usage(const std::string& msg) {
    std::cerr << "usage error: " << msg << "\nusage: " << USAGE << std::endl;
    std::exit(2);
}

// websocketpp's own asio config with its logging compiled out (the suites and the benchmark read nothing of
// it); its permessage-deflate stays the config's "disabled" one, so every offer is declined (WS-HS-5)
struct echo_config : public websocketpp::config::asio {
    typedef echo_config type;
    typedef websocketpp::config::asio base;
    static const websocketpp::log::level elog_level = websocketpp::log::elevel::none;
    static const websocketpp::log::level alog_level = websocketpp::log::alevel::none;
};

struct Args {
    std::string host, port;
    unsigned threads = 0;
    // limits.max_payload (a frame) and websocket.max_message (a message), the spec's defaults
    // 10 MiB and 100 MiB (spec/websocket.md)
    std::uint64_t max_frame = 10u << 20, max_message = 100u << 20;
    bool any_path = true;
    std::string path, subprotocol = DEFAULT_SUBPROTOCOL;
};

std::uint64_t positive(const nlohmann::json& v, const char* name, std::uint64_t dflt) {
    if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<std::int64_t>() >= 0))
        usage(std::string("--codec: ") + name + " is not a non-negative integer");
    std::uint64_t n = v.get<std::uint64_t>();
    return n == 0 ? dflt : n;  // 0: the spec's default
}

void parse_codec(const std::string& text, Args& a) {
    nlohmann::json v;
    try {
        v = nlohmann::json::parse(text);
    } catch (const std::exception& e) {
        usage(std::string("--codec: ") + e.what());
    }
    if (!v.is_object() || v.value("protocol", "") != "websocket") usage("this server speaks websocket only");
    for (auto& [k, val] : v.items()) {
        if (k == "protocol") continue;
        if (!val.is_object()) usage("--codec: " + k + " is not an object");
        if (k == "limits") {
            for (auto& [lk, lv] : val.items()) {
                if (lk != "max_payload") usage("--codec: unknown key limits." + lk);
                a.max_frame = positive(lv, "limits.max_payload", a.max_frame);
            }
        } else if (k == "websocket") {
            for (auto& [wk, wv] : val.items()) {
                if (wk == "max_message") {
                    a.max_message = positive(wv, "websocket.max_message", a.max_message);
                } else if (wk == "permessage_deflate") {
                    if (!wv.is_boolean()) usage("--codec: websocket.permessage_deflate is not true or false");
                    // websocketpp's extension, measured with the suite, inflates without a bound and takes
                    // RSV1 on a continuation (README): the profile cannot be served as asked
                    if (wv.get<bool>()) usage("permessage-deflate: not offered with websocketpp (README)");
                } else if (wk == "role") {
                    if (wv != "server") usage("--codec: this program is a server (websocket.role \"server\")");
                } else if (wk == "path" || wk == "subprotocol") {
                    if (!wv.is_string()) usage("--codec: websocket." + wk + " is not a string");
                    if (wk == "path") {
                        a.any_path = false;
                        a.path = wv.get<std::string>();
                    } else {
                        a.subprotocol = wv.get<std::string>();
                    }
                } else {
                    usage("--codec: unknown key websocket." + wk);
                }
            }
        } else {
            usage("--codec: unknown key " + k);
        }
    }
}

Args parse_args(int argc, char** argv) {
    Args a;
    std::string listen, codec;
    for (int i = 1; i < argc; ++i) {
        std::string f = argv[i];
        if (f == "--help" || f == "-h") {
            std::cout << "usage: " << USAGE << std::endl;
            std::exit(0);
        }
        if (i + 1 >= argc) usage(f + " needs a value");
        std::string val = argv[++i];
        if (f == "--listen") {
            listen = val;
        } else if (f == "--codec") {
            codec = val;
        } else if (f == "--protocol") {
            if (val != "websocket") usage("this server speaks websocket only");
            codec = R"({"protocol": "websocket"})";
        } else if (f == "--threads") {
            char* end = nullptr;
            long n = std::strtol(val.c_str(), &end, 10);
            if (*end || n <= 0 || n > 1024) usage("--threads: a positive integer");
            a.threads = unsigned(n);
        } else {
            usage("unknown argument " + f);
        }
    }
    if (listen.empty()) usage("--listen is required");
    if (codec.empty()) usage("--codec or --protocol is required");
    auto colon = listen.rfind(':');
    if (colon == std::string::npos) usage("--listen: HOST:PORT");
    a.host = listen.substr(0, colon);
    a.port = listen.substr(colon + 1);
    if (a.host.size() > 1 && a.host.front() == '[' && a.host.back() == ']')
        a.host = a.host.substr(1, a.host.size() - 2);
    parse_codec(codec, a);
    if (!a.threads) a.threads = std::max(1u, std::thread::hardware_concurrency());
    return a;
}

struct Stats {
    std::atomic<std::uint64_t> connections{0}, frames{0}, bytes{0}, protocol_errors{0};
};

int serve(const Args& a) {
    using server = websocketpp::server<echo_config>;
    using websocketpp::connection_hdl;
    namespace asio = websocketpp::lib::asio;

    asio::io_service ios;
    server s;
    Stats stats;
    s.init_asio(&ios);
    s.set_reuse_addr(true);
    // websocketpp has one limit, the message's, and it applies it to each frame's length too
    // (processors/hybi13.hpp, consume): the smaller of the profile's two limits, so that a frame over the
    // frame limit is refused (a message limit above the frame limit cannot be expressed: README)
    s.set_max_message_size(std::min(a.max_frame, a.max_message));
    s.set_socket_init_handler([](connection_hdl, asio::ip::tcp::socket& sock) {
        asio::error_code ec;
        sock.set_option(asio::ip::tcp::no_delay(true), ec);
    });
    s.set_validate_handler([&](connection_hdl h) {
        auto con = s.get_con_from_hdl(h);
        if (!a.any_path && con->get_resource() != a.path) {
            con->set_status(websocketpp::http::status_code::not_found);
            return false;
        }
        for (const auto& p : con->get_requested_subprotocols())
            if (p == a.subprotocol) {
                con->select_subprotocol(p);
                break;
            }
        return true;
    });
    s.set_open_handler([&](connection_hdl) { stats.connections.fetch_add(1, std::memory_order_relaxed); });
    s.set_fail_handler([&](connection_hdl) { stats.protocol_errors.fetch_add(1, std::memory_order_relaxed); });
    s.set_close_handler([&](connection_hdl h) {
        auto code = s.get_con_from_hdl(h)->get_local_close_code();
        namespace st = websocketpp::close::status;
        if (code == st::protocol_error || code == st::invalid_payload || code == st::message_too_big)
            stats.protocol_errors.fetch_add(1, std::memory_order_relaxed);
    });
    s.set_message_handler([&](connection_hdl h, server::message_ptr msg) {
        stats.frames.fetch_add(1, std::memory_order_relaxed);
        stats.bytes.fetch_add(msg->get_payload().size(), std::memory_order_relaxed);
        websocketpp::lib::error_code ec;
        s.send(h, msg->get_payload(), msg->get_opcode(), ec);  // a closing connection refuses: nothing to do
    });

    websocketpp::lib::error_code ec;
    s.listen(a.host, a.port, ec);
    if (!ec) s.start_accept(ec);
    if (ec) {
        std::cerr << "fp-websocketpp-server: cannot listen on " << a.host << ":" << a.port << ": " << ec.message()
                  << std::endl;
        return 1;
    }
    asio::error_code aec;
    auto ep = s.get_local_endpoint(aec);
    std::string host = ep.address().is_v6() ? "[" + ep.address().to_string() + "]" : ep.address().to_string();
    std::printf("LISTENING %s:%u\n", host.c_str(), unsigned(ep.port()));
    std::fflush(stdout);

    asio::signal_set signals(ios, SIGINT, SIGTERM);
    signals.async_wait([&](const asio::error_code&, int) {
        std::printf("{\"connections\": %llu, \"frames\": %llu, \"bytes\": %llu, \"protocol_errors\": %llu}\n",
                    (unsigned long long)stats.connections.load(), (unsigned long long)stats.frames.load(),
                    (unsigned long long)stats.bytes.load(), (unsigned long long)stats.protocol_errors.load());
        std::fflush(stdout);
        // the other threads still run connections: leave without unwinding them
        std::_Exit(0);
    });

    std::vector<std::thread> pool;
    for (unsigned i = 1; i < a.threads; ++i) pool.emplace_back([&] { ios.run(); });
    ios.run();
    for (auto& t : pool) t.join();
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    Args a = parse_args(argc, argv);
    return serve(a);
}
