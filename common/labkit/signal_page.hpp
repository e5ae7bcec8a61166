// A page of memory that the auditor and one timed program share (a memfd the grader made and
// gave to both), through which "go" and "done" pass without a system call on either side
// (docs/architecture.md, "Paced timing").
//
// Why: a sample's window holds the program's answer, and over pipes that answer is four
// system calls (the auditor's write of "go", the program's read, its write of "done", the
// auditor's read) and the program's formatting of a line. On a busy virtual machine a
// process's system calls can run several times slower for a whole round, which added 10 to
// 20 us to every sample of that process. Here the auditor stores a ticket and the program,
// spinning on it, sees it at once; the program stores its answer and the auditor, spinning,
// sees that at once. Each side sleeps on a futex only once it has spun for longer than a
// turn of a round, and the other side wakes it only when it says it sleeps.
//
// The program's side is the student's, like everything in its process: whatever it writes
// here is read as an untrusted claim, checked (the ticket must be the one asked, the number
// the sample's, the time a finite number) and never trusted for anything the grade rests on.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>

namespace labkit {

class SignalPage {
public:
    static constexpr std::size_t kBytes = 4096;

    // Maps the page behind `fd` (at least kBytes long; the descriptor stays the caller's).
    // Throws std::runtime_error when it cannot.
    explicit SignalPage(int fd);
    ~SignalPage();
    SignalPage(const SignalPage&) = delete;
    SignalPage& operator=(const SignalPage&) = delete;

    struct Go {
        std::uint32_t ticket = 0;
        std::uint64_t number = 0;
    };
    struct Done {
        std::uint32_t ticket = 0;
        std::uint64_t number = 0;
        double ms = 0;
    };
    enum class Wait { arrived, stopped, timed_out };

    // ---- the auditor's side --------------------------------------------------------------
    // Asks for sample `number` (a new ticket); wakes the program if it said it sleeps.
    std::uint32_t send_go(std::uint64_t number);
    // The last ticket this side sent (0 before the first): once the program has answered
    // it, the page's answer carries it; an answer with another ticket before the next
    // "go" was written unasked.
    std::uint32_t sent() const { return sent_; }
    // The program's latest answer as it stands (its ticket is 0 before the first).
    Done done() const;
    // Waits for the answer's ticket to change from `previous` (the one on the page before
    // "go"): spins for `spin_us`, then sleeps a millisecond at a time, until `timeout_ms`
    // (< 0: for ever). `stop` is asked every few microseconds while spinning and after every
    // sleep; true ends the wait (a closed pipe).
    Wait wait_done(std::uint32_t previous, int timeout_ms, int spin_us, const std::function<bool()>& stop);

    // ---- the program's side --------------------------------------------------------------
    // Waits for a ticket other than `last`, the same way as wait_done.
    Wait wait_go(std::uint32_t last, int timeout_ms, int spin_us, const std::function<bool()>& stop, Go& go);
    // Answers `go`; wakes the auditor if it said it sleeps.
    void send_done(const Go& go, double ms);

private:
    struct Words;
    Words* words_ = nullptr;
    std::uint32_t sent_ = 0;  // the auditor's last ticket, kept here: the program can write the page
};

}  // namespace labkit
