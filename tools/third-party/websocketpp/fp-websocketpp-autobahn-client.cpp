// fp-websocketpp-autobahn-client: the Autobahn testsuite's client protocol (reference-impls/README.md,
// "fp-autobahn-client") on websocketpp's client endpoint (websocketpp::client over its asio_client config),
// for `frameproof autobahn --client-cmd`:
//
//   fp-websocketpp-autobahn-client --connect HOST:PORT --agent NAME [--cases all|N]
//
// GET /getCaseCount (one text message: the count), then for each case GET /runCase?case=I&agent=NAME,
// echoing every text and binary message back with its opcode (message handler, endpoint::send) until the
// connection closes, then GET /updateReports?agent=NAME. One connection at a time, each run to its end by
// the endpoint's io_service. No compression (the config's permessage-deflate is the disabled one), max
// message size 64 MiB + 1 KiB (the contract: no message size limit below 64 MiB). Masking, UTF-8, pings
// and the close handshake are websocketpp's own. Exit 0 when every case ran (the verdicts are Autobahn's).
#include <websocketpp/client.hpp>
#include <websocketpp/config/asio_no_tls_client.hpp>

#include "../common/autobahn_client_args.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

// websocketpp's asio client config with its logging compiled out
struct client_config : public websocketpp::config::asio_client {
    typedef client_config type;
    typedef websocketpp::config::asio_client base;
    static const websocketpp::log::level elog_level = websocketpp::log::elevel::none;
    static const websocketpp::log::level alog_level = websocketpp::log::alevel::none;
};
typedef websocketpp::client<client_config> client;
using websocketpp::connection_hdl;

static const char* kUsage = "usage: fp-websocketpp-autobahn-client --connect HOST:PORT --agent NAME [--cases all|N]";
static const std::size_t kLimit = (64u << 20) + 1024;

// Runs one connection to `uri` until it ends; `on_message` sees each message; with `close_on_open`
// the client starts the close handshake as soon as it is open. False when the connection could not
// be opened.
template <class OnMessage>
static bool run(const std::string& uri, OnMessage on_message, std::string& error, bool close_on_open = false) {
    client c;
    c.init_asio();
    c.set_max_message_size(kLimit);
    bool opened = false;
    c.set_socket_init_handler([](connection_hdl, websocketpp::lib::asio::ip::tcp::socket& sock) {
        websocketpp::lib::asio::error_code ec;
        sock.set_option(websocketpp::lib::asio::ip::tcp::no_delay(true), ec);
    });
    c.set_open_handler([&](connection_hdl h) {
        opened = true;
        if (close_on_open) {
            websocketpp::lib::error_code ec;
            c.close(h, websocketpp::close::status::normal, "", ec);
        }
    });
    c.set_fail_handler([&](connection_hdl h) {
        error = c.get_con_from_hdl(h)->get_ec().message();
    });
    c.set_message_handler([&](connection_hdl h, client::message_ptr msg) { on_message(c, h, msg); });
    websocketpp::lib::error_code ec;
    client::connection_ptr con = c.get_connection(uri, ec);
    if (ec) {
        error = ec.message();
        return false;
    }
    c.connect(con);
    c.run();  // until the connection is closed or failed: nothing else runs on this endpoint
    return opened;
}

int main(int argc, char** argv) {
    const fp_autobahn::Args args = fp_autobahn::parse(argc, argv, kUsage);
    const std::string base = "ws://" + args.connect, q = args.agent_query;

    std::string count_text, error;
    bool got = run(base + "/getCaseCount", [&](client& c, connection_hdl h, client::message_ptr msg) {
        count_text = msg->get_payload();
        websocketpp::lib::error_code ec;
        c.close(h, websocketpp::close::status::normal, "", ec);
    }, error);
    std::size_t count = 0;
    try {
        count = std::stoul(count_text);
    } catch (const std::exception&) {
        std::cerr << "fp-websocketpp-autobahn-client: getCaseCount: no count ("
                  << (got ? "got " + count_text : error) << ")\n";
        return 1;
    }
    if (args.cases >= 0) count = std::min<std::size_t>(count, static_cast<std::size_t>(args.cases));
    for (std::size_t i = 1; i <= count; i++) {
        std::string err;
        bool ok = run(base + "/runCase?case=" + std::to_string(i) + "&agent=" + q,
                      [](client& c, connection_hdl h, client::message_ptr msg) {
                          websocketpp::lib::error_code ec;
                          c.send(h, msg->get_payload(), msg->get_opcode(), ec);
                      }, err);
        if (!ok) std::cerr << "fp-websocketpp-autobahn-client: case " << i << ": " << err << "\n";
    }
    bool ok = run(base + "/updateReports?agent=" + q, [](client&, connection_hdl, client::message_ptr) {}, error,
                  true);
    if (!ok) {
        std::cerr << "fp-websocketpp-autobahn-client: updateReports: " << error << "\n";
        return 1;
    }
    return 0;
}
