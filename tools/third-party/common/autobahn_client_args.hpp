// The command line of the Autobahn client contract (reference-impls/README.md, "fp-autobahn-client")
// shared by the C++ third-party wrappers' clients (Boost.Beast, websocketpp), included as
// "../common/autobahn_client_args.hpp": --connect HOST:PORT --agent NAME [--cases all|N], usage errors
// as the contract has them.
#pragma once

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

namespace fp_autobahn {

struct Args {
    std::string connect;
    std::string agent_query;  // the agent name as a query value
    long cases = -1;          // -1: all cases
};

[[noreturn]] inline void usage_error(const char* usage, const std::string& msg) {
    std::cerr << "usage error: " << msg << "\n" << usage << "\n";
    std::exit(2);
}

// A query value: unreserved characters as they are, every other byte %XX.
inline std::string query_escape(const std::string& s) {
    std::string out;
    for (unsigned char c : s) {
        if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
            out += static_cast<char>(c);
        } else {
            char buf[4];
            std::snprintf(buf, sizeof buf, "%%%02X", c);
            out += buf;
        }
    }
    return out;
}

// Parses argv; --help prints `usage` and exits 0, a usage error exits 2.
inline Args parse(int argc, char** argv, const char* usage) {
    Args a;
    std::string agent;
    for (int i = 1; i < argc; i++) {
        std::string k = argv[i];
        if (k == "--help" || k == "-h") {
            std::cout << usage << "\n";
            std::exit(0);
        }
        if (i + 1 >= argc) usage_error(usage, k + " needs a value");
        std::string v = argv[++i];
        if (k == "--connect") {
            a.connect = v;
        } else if (k == "--agent") {
            agent = v;
        } else if (k == "--cases") {
            if (v != "all") {
                char* end = nullptr;
                long n = std::strtol(v.c_str(), &end, 10);
                if (v.empty() || *end != '\0' || n < 0) usage_error(usage, "--cases " + v + ": all or a number");
                a.cases = n;
            }
        } else {
            usage_error(usage, "unknown flag " + k);
        }
    }
    if (a.connect.empty() || agent.empty()) usage_error(usage, "--connect and --agent are required");
    a.agent_query = query_escape(agent);
    return a;
}

}  // namespace fp_autobahn
