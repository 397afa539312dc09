// Lower a SPIR-V module with the spv-subgroup C interface from C++, then check the result.
//
//   lower_and_validate_cpp IN.spv OUT.spv
//
// The C++ counterpart of lower_and_validate.c: the library's objects held by std::unique_ptr
// with their destroy functions as deleters. The install test (crates/spv-subgroup/tests/install.rs)
// builds it against an installed prefix with pkg-config and with CMake's find_package; it exits 0
// when every check passes.
#include "spv_subgroup.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <vector>

namespace {

template <typename T, void (*Destroy)(T *)>
struct Deleter {
    void operator()(T *p) const { Destroy(p); }
};
using Context = std::unique_ptr<spvsg_context_t, Deleter<spvsg_context_t, spvsg_context_destroy>>;
using Report = std::unique_ptr<spvsg_report_t, Deleter<spvsg_report_t, spvsg_report_destroy>>;
using Binary = std::unique_ptr<spvsg_binary_t, Deleter<spvsg_binary_t, spvsg_binary_destroy>>;
using Diagnostic =
    std::unique_ptr<spvsg_diagnostic_t, Deleter<spvsg_diagnostic_t, spvsg_diagnostic_destroy>>;

bool check(bool ok, const char *what) {
    if (!ok) std::cerr << "check failed: " << what << "\n";
    return ok;
}

// The whole file as 32-bit words in host byte order.
std::vector<uint32_t> read_words(const char *path) {
    std::ifstream in(path, std::ios::binary);
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::vector<uint32_t> words(bytes.size() / 4);
    if (!words.empty()) std::memcpy(words.data(), bytes.data(), words.size() * 4);
    return words;
}

}  // namespace

int main(int argc, char **argv) {
    if (argc != 3) {
        std::cerr << "usage: " << argv[0] << " IN.spv OUT.spv\n";
        return 2;
    }
    std::vector<uint32_t> words = read_words(argv[1]);
    if (!check(words.size() > 5, "read the input module")) return 1;
    Context ctx(spvsg_context_create());
    if (!check(ctx != nullptr, "create a context")) return 1;

    // The input uses operations Vulkan 1.1 lacks: validation finds them.
    spvsg_report_t *raw_report = nullptr;
    spvsg_result_t r = spvsg_validate(ctx.get(), words.data(), words.size(), &raw_report, nullptr);
    Report report(raw_report);
    if (!check(r == SPVSG_FINDINGS && spvsg_report_count(report.get()) > 0,
               "the input does not fit vulkan1.1"))
        return 1;

    // Lower it; the library verified the output for the target.
    spvsg_binary_t *raw_binary = nullptr;
    spvsg_diagnostic_t *raw_diag = nullptr;
    r = spvsg_lower(ctx.get(), words.data(), words.size(), &raw_binary, &raw_diag);
    Binary lowered(raw_binary);
    Diagnostic diag(raw_diag);
    if (r != SPVSG_SUCCESS) {
        std::cerr << "lower: " << spvsg_result_string(r) << ": " << (diag ? diag->message : "")
                  << "\n";
        return 1;
    }
    if (!check(lowered->changed && lowered->rewritten > 0, "the module was rewritten")) return 1;
    std::ofstream out(argv[2], std::ios::binary);
    out.write(reinterpret_cast<const char *>(lowered->code),
              static_cast<std::streamsize>(lowered->word_count * 4));
    if (!check(out.good(), "write the output")) return 1;
    std::cout << "ok: spv-subgroup " << spvsg_version() << " from C++, " << lowered->rewritten
              << " instructions lowered\n";
    return 0;
}
