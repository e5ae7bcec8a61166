#include "labkit/signal_page.hpp"

#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <climits>
#include <cstddef>
#include <cstring>
#include <ctime>
#include <stdexcept>
#include <string>

namespace labkit {

// Each side writes its own cache lines only, so that spinning on a word never slows the
// side that writes the other one. The futex words are 32 bits, as futexes are.
struct SignalPage::Words {
    alignas(64) std::atomic<std::uint64_t> go_number;
    std::atomic<std::uint32_t> go_ticket;  // the auditor's; 0 until the first "go"
    alignas(64) std::atomic<std::uint32_t> program_sleeps;
    alignas(64) std::atomic<std::uint64_t> done_number;
    std::atomic<std::uint64_t> done_ms_bits;
    std::atomic<std::uint32_t> done_ticket;  // the program's; 0 until its first answer
    alignas(64) std::atomic<std::uint32_t> auditor_sleeps;
};

namespace {

static_assert(std::atomic<std::uint64_t>::is_always_lock_free && std::atomic<std::uint32_t>::is_always_lock_free,
              "the page's words are shared between processes: they must be lock-free");
static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t), "a futex word is 32 bits");

using Clock = std::chrono::steady_clock;

// Spins between looks at the clock (a few microseconds), and looks at the clock between
// calls of `stop` (a pipe's poll, a system call: about every 100 us, so that a word that
// comes while it runs is seen late only rarely).
constexpr int kSpinsPerCheck = 128;
constexpr int kChecksPerStop = 16;

inline void relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield" ::: "memory");
#endif
}

std::uint32_t* futex_word(std::atomic<std::uint32_t>& word) { return reinterpret_cast<std::uint32_t*>(&word); }

// Sleeps while `word` holds `expected`, for at most a millisecond (shared, not private: the
// page is mapped by two processes).
void futex_wait(std::atomic<std::uint32_t>& word, std::uint32_t expected) {
    const timespec timeout{0, 1000000};
    (void)::syscall(SYS_futex, futex_word(word), FUTEX_WAIT, expected, &timeout, nullptr, 0);
}

void futex_wake(std::atomic<std::uint32_t>& word) {
    (void)::syscall(SYS_futex, futex_word(word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

// Waits until `word` is no longer `unchanged`: spinning for `spin_us`, then sleeping on the
// futex with `sleeps` set so that the other side knows to wake this one.
SignalPage::Wait wait_for_change(std::atomic<std::uint32_t>& word, std::uint32_t unchanged,
                                 std::atomic<std::uint32_t>& sleeps, int timeout_ms, int spin_us,
                                 const std::function<bool()>& stop) {
    const auto start = Clock::now();
    const auto spin_until = start + std::chrono::microseconds(spin_us);
    const auto deadline = start + std::chrono::milliseconds(timeout_ms < 0 ? 0 : timeout_ms);
    for (long spins = 0;; ++spins) {
        if (word.load(std::memory_order_acquire) != unchanged) return SignalPage::Wait::arrived;
        if (spins % kSpinsPerCheck != kSpinsPerCheck - 1) {
            relax();
            continue;
        }
        const auto now = Clock::now();
        const bool sleeping = now >= spin_until;
        if (sleeping) {
            // Dekker's order: say it sleeps, then look again; the other side stores its word,
            // then looks at `sleeps`. One of the two sees the other.
            sleeps.store(1, std::memory_order_seq_cst);
            if (word.load(std::memory_order_seq_cst) == unchanged) futex_wait(word, unchanged);
            sleeps.store(0, std::memory_order_relaxed);
        }
        if (word.load(std::memory_order_acquire) != unchanged) return SignalPage::Wait::arrived;
        if (stop && (sleeping || spins / kSpinsPerCheck % kChecksPerStop == 0) && stop()) return SignalPage::Wait::stopped;
        if (timeout_ms >= 0 && Clock::now() >= deadline) return SignalPage::Wait::timed_out;
    }
}

}  // namespace

SignalPage::SignalPage(int fd) {
    struct stat st {};
    if (::fstat(fd, &st) != 0) throw std::runtime_error(std::string("signal page: fstat failed: ") + std::strerror(errno));
    if (st.st_size < static_cast<off_t>(kBytes))
        throw std::runtime_error("signal page: descriptor " + std::to_string(fd) + " holds " +
                                 std::to_string(st.st_size) + " bytes, not " + std::to_string(kBytes));
    void* at = ::mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (at == MAP_FAILED) throw std::runtime_error(std::string("signal page: mmap failed: ") + std::strerror(errno));
    static_assert(sizeof(Words) <= kBytes);
    // The layout is part of the protocol (the grader's CPU tests speak it from Python).
    static_assert(offsetof(Words, go_number) == 0 && offsetof(Words, go_ticket) == 8 &&
                  offsetof(Words, program_sleeps) == 64 &&
                  offsetof(Words, done_number) == 128 && offsetof(Words, done_ms_bits) == 136 &&
                  offsetof(Words, done_ticket) == 144 && offsetof(Words, auditor_sleeps) == 192);
    words_ = static_cast<Words*>(at);  // a fresh memfd is zeros: every word starts at 0
}

SignalPage::~SignalPage() {
    if (words_ != nullptr) ::munmap(words_, kBytes);
}

std::uint32_t SignalPage::send_go(std::uint64_t number) {
    Words& w = *words_;
    // The ticket counts on from this side's own last one, never from the page, which the
    // program can write as well.
    const std::uint32_t ticket = ++sent_ == 0 ? ++sent_ : sent_;
    w.go_number.store(number, std::memory_order_relaxed);
    w.go_ticket.store(ticket, std::memory_order_seq_cst);
    if (w.program_sleeps.load(std::memory_order_seq_cst) != 0) futex_wake(w.go_ticket);
    return ticket;
}

SignalPage::Done SignalPage::done() const {
    const Words& w = *words_;
    Done d;
    d.ticket = w.done_ticket.load(std::memory_order_acquire);
    d.number = w.done_number.load(std::memory_order_relaxed);
    d.ms = std::bit_cast<double>(w.done_ms_bits.load(std::memory_order_relaxed));
    return d;
}

SignalPage::Wait SignalPage::wait_done(std::uint32_t previous, int timeout_ms, int spin_us,
                                       const std::function<bool()>& stop) {
    return wait_for_change(words_->done_ticket, previous, words_->auditor_sleeps, timeout_ms, spin_us, stop);
}

SignalPage::Wait SignalPage::wait_go(std::uint32_t last, int timeout_ms, int spin_us,
                                     const std::function<bool()>& stop, Go& go) {
    const Wait got = wait_for_change(words_->go_ticket, last, words_->program_sleeps, timeout_ms, spin_us, stop);
    if (got == Wait::arrived) {
        go.ticket = words_->go_ticket.load(std::memory_order_acquire);
        go.number = words_->go_number.load(std::memory_order_relaxed);
    }
    return got;
}

void SignalPage::send_done(const Go& go, double ms) {
    Words& w = *words_;
    w.done_number.store(go.number, std::memory_order_relaxed);
    w.done_ms_bits.store(std::bit_cast<std::uint64_t>(ms), std::memory_order_relaxed);
    w.done_ticket.store(go.ticket, std::memory_order_seq_cst);
    if (w.auditor_sleeps.load(std::memory_order_seq_cst) != 0) futex_wake(w.done_ticket);
}

}  // namespace labkit
