// SPDX-License-Identifier: BSD-3-Clause
// Text for the benchmarks' CSV files and gnuplot scripts.
#pragma once

#include <cmath>
#include <cstdio>
#include <string>

namespace mpipcl::bench {

/// A number for a CSV field: empty when NaN (not measured).
[[nodiscard]] inline std::string csv_number(double value, const char* format = "%.6g")
{
    if (std::isnan(value)) {
        return {};
    }
    char text[40];
    std::snprintf(text, sizeof text, format, value);
    return text;
}

/// @p text as one CSV field: in double quotes, inner quotes doubled.
[[nodiscard]] inline std::string csv_quoted(const std::string& text)
{
    std::string out = "\"";
    for (const char c : text) {
        out += c;
        if (c == '"') {
            out += '"';
        }
    }
    return out + "\"";
}

/// A string inside single quotes in gnuplot, where '' stands for one quote.
[[nodiscard]] inline std::string gp_quoted(const std::string& text)
{
    std::string out = "'";
    for (const char c : text) {
        out += c;
        if (c == '\'') {
            out += '\'';
        }
    }
    return out + "'";
}

}  // namespace mpipcl::bench
