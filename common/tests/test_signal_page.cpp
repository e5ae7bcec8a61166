// Tests of labkit/signal_page.hpp: "go" and "done" through a page two processes share, with
// the spin, the sleep on a futex and the wake-up, a deadline, a stop asked for, and an
// answer that is not the one asked.
#include <doctest/doctest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "labkit/signal_page.hpp"

using labkit::SignalPage;
using Clock = std::chrono::steady_clock;

namespace {

struct Memfd {
    int fd = -1;
    explicit Memfd(std::size_t bytes = SignalPage::kBytes) {
        fd = ::memfd_create("signal-page-test", MFD_CLOEXEC);
        REQUIRE(fd >= 0);
        REQUIRE(::ftruncate(fd, static_cast<off_t>(bytes)) == 0);
    }
    ~Memfd() { ::close(fd); }
};

double ms_since(Clock::time_point start) {
    return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

}  // namespace

TEST_CASE("test_signal_page_carries_go_and_done_between_two_processes") {
    Memfd memfd;
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {  // the program: answers three samples, then leaves
        SignalPage page(memfd.fd);
        SignalPage::Go go;
        for (int i = 0; i < 3; ++i) {
            if (page.wait_go(go.ticket, 5000, 1000, nullptr, go) != SignalPage::Wait::arrived) ::_exit(2);
            page.send_done(go, 0.5 + static_cast<double>(go.number));
        }
        ::_exit(0);
    }
    SignalPage page(memfd.fd);
    std::uint32_t answered = 0;
    for (std::uint64_t n : {40u, 41u, 42u}) {
        const std::uint32_t ticket = page.send_go(n);
        REQUIRE(page.wait_done(answered, 5000, 20000, nullptr) == SignalPage::Wait::arrived);
        const SignalPage::Done done = page.done();
        answered = done.ticket;
        CHECK(done.ticket == ticket);
        CHECK(done.number == n);
        CHECK(done.ms == doctest::Approx(0.5 + static_cast<double>(n)));
    }
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("test_signal_page_reaches_a_side_that_sleeps") {
    // Past its spin (0 here) each side sleeps on the page's futex, a millisecond at a time,
    // saying so on the page; the other side's word still reaches it (and wakes it).
    Memfd memfd;
    SignalPage auditor(memfd.fd), program(memfd.fd);
    std::atomic<double> woke_after_ms{-1};
    std::thread t([&] {
        SignalPage::Go go;
        REQUIRE(program.wait_go(0, 5000, 0, nullptr, go) == SignalPage::Wait::arrived);
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
        program.send_done(go, 1.25);
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    const std::uint32_t ticket = auditor.send_go(7);
    const auto asked = Clock::now();
    REQUIRE(auditor.wait_done(0, 5000, 0, nullptr) == SignalPage::Wait::arrived);
    t.join();
    CHECK(ms_since(asked) < 1000);  // the answer came 30 ms after the go, not at the deadline
    CHECK(auditor.done().ticket == ticket);
    CHECK(auditor.done().ms == doctest::Approx(1.25));
}

TEST_CASE("test_signal_page_gives_up_at_its_deadline_and_when_asked_to_stop") {
    Memfd memfd;
    SignalPage page(memfd.fd);
    auto start = Clock::now();
    CHECK(page.wait_done(0, 40, 5000, nullptr) == SignalPage::Wait::timed_out);
    CHECK(ms_since(start) >= 39);
    CHECK(ms_since(start) < 2000);

    int asked = 0;
    start = Clock::now();
    CHECK(page.wait_done(0, 5000, 100, [&] { return ++asked == 3; }) == SignalPage::Wait::stopped);
    CHECK(asked == 3);
    CHECK(ms_since(start) < 2000);
}

TEST_CASE("test_signal_page_shows_an_answer_that_is_not_the_one_asked") {
    // The page is the program's to write: an answer for another sample, or a ticket of its
    // own, reaches the auditor as it was written, for the auditor to call a breach.
    Memfd memfd;
    SignalPage auditor(memfd.fd), program(memfd.fd);
    const std::uint32_t ticket = auditor.send_go(9);
    SignalPage::Go made_up;
    made_up.ticket = ticket + 5;
    made_up.number = 8;
    program.send_done(made_up, -1.0);
    REQUIRE(auditor.wait_done(0, 1000, 1000, nullptr) == SignalPage::Wait::arrived);
    CHECK(auditor.done().ticket == ticket + 5);
    CHECK(auditor.done().number == 8);
    CHECK(auditor.done().ms == -1.0);
    // Its tickets are the auditor's own count: the next is the one after, whatever the page says.
    CHECK(auditor.send_go(10) == ticket + 1);
}

TEST_CASE("test_signal_page_refuses_a_descriptor_too_small") {
    Memfd small(64);
    CHECK_THROWS_WITH_AS(SignalPage(small.fd), doctest::Contains("holds 64 bytes"), std::runtime_error);
}
