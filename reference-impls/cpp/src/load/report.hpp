// fp-load's report of a run: the summary for people on stdout, and the JSON report (--json FILE,
// the keys reference-impls/README.md lists; the suite reads it).
#pragma once

#include <string>

#include "options.hpp"
#include "result.hpp"

namespace fp::load {

// Prints the summary, writes the JSON report if asked; returns the exit status (0: every request
// verified, or in receive mode written, and no error).
int report(const Report& rep, const Options& opt, const std::string& protocol);

}  // namespace fp::load
