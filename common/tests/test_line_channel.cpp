// Tests of labkit/line_channel.hpp: what the grader's auditor reads from a program it does
// not trust (whole lines, deadlines, too long, not text, closed, speaking unasked) and the
// descriptors that travel with a line over a Unix socket.
#include <doctest/doctest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <string>
#include <thread>

#include "labkit/line_channel.hpp"

using labkit::LineChannel;
using Status = labkit::LineChannel::Status;

namespace {

struct Pipe {
    int read_end = -1, write_end = -1;
    Pipe() {
        int fds[2];
        REQUIRE(::pipe(fds) == 0);
        read_end = fds[0];
        write_end = fds[1];
    }
    ~Pipe() {
        close_write();
        if (read_end >= 0) ::close(read_end);
    }
    void write(const std::string& text) const { REQUIRE(::write(write_end, text.data(), text.size()) == static_cast<ssize_t>(text.size())); }
    void close_write() {
        if (write_end >= 0) ::close(write_end);
        write_end = -1;
    }
};

}  // namespace

TEST_CASE("test_line_channel_reads_whole_lines_and_keeps_what_follows") {
    Pipe p;
    LineChannel c(p.read_end, -1);
    p.write("done 1 0.5\ndone 2");
    auto got = c.read_line(1000);
    CHECK(got.status == Status::line);
    CHECK(got.line == "done 1 0.5");
    CHECK(c.has_unasked_input());  // the start of the next line is already there
    p.write(" 0.25\n");
    got = c.read_line(1000);
    CHECK(got.status == Status::line);
    CHECK(got.line == "done 2 0.25");
    CHECK_FALSE(c.has_unasked_input());
}

TEST_CASE("test_line_channel_gives_up_at_its_deadline_and_tells_a_closed_pipe") {
    Pipe p;
    LineChannel c(p.read_end, -1);
    const auto start = std::chrono::steady_clock::now();
    CHECK(c.read_line(50, 1000).status == Status::timed_out);
    const auto waited = std::chrono::steady_clock::now() - start;
    CHECK(waited >= std::chrono::milliseconds(45));
    CHECK(waited < std::chrono::seconds(5));
    p.close_write();
    CHECK(c.read_line(1000).status == Status::closed);
    CHECK(c.has_unasked_input());  // a closed pipe is something to notice, too
    CHECK(c.drain_for_message().empty());
}

TEST_CASE("test_line_channel_splits_a_line_into_its_words") {
    CHECK(labkit::split_words("sample 12 student  timed -1") ==
          std::vector<std::string>{"sample", "12", "student", "timed", "-1"});
    CHECK(labkit::split_words("").empty());
}

TEST_CASE("test_line_channel_refuses_lines_that_are_too_long_or_not_text") {
    Pipe p;
    LineChannel c(p.read_end, -1);
    p.write("done 1 \x1b[2J0.5\n");
    auto got = c.read_line(1000);
    CHECK(got.status == Status::not_text);
    CHECK(labkit::quote_for_message(got.line) == "done 1 ?[2J0.5");
    std::thread writer([&] { p.write(std::string(LineChannel::kMaxLine + 10, 'x')); });
    CHECK(c.read_line(2000).status == Status::too_long);
    writer.join();
}

TEST_CASE("test_line_channel_notices_a_program_that_speaks_unasked_and_quotes_it") {
    Pipe p;
    LineChannel c(p.read_end, -1);
    CHECK_FALSE(c.has_unasked_input());
    p.write("done 7 0.0\nextra");
    CHECK(c.has_unasked_input());
    CHECK(c.drain_for_message(8) == "done 7 0...");
    CHECK_FALSE(c.has_unasked_input());
}

TEST_CASE("test_line_channel_writes_lines_and_says_when_the_reader_has_gone") {
    Pipe p;
    LineChannel c(-1, p.write_end);
    CHECK(c.write_line("go 3"));
    char buffer[16] = {};
    CHECK(::read(p.read_end, buffer, sizeof buffer) == 5);
    CHECK(std::string(buffer) == "go 3\n");
    ::close(p.read_end);
    p.read_end = -1;
    struct sigaction ignore{}, before{};
    ignore.sa_handler = SIG_IGN;
    ::sigaction(SIGPIPE, &ignore, &before);
    CHECK_FALSE(c.write_line("go 4"));
    ::sigaction(SIGPIPE, &before, nullptr);
}

TEST_CASE("test_line_channel_passes_descriptors_with_a_line_over_a_unix_socket") {
    int pair[2];
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, pair) == 0);
    Pipe p;
    labkit::send_line_with_fds(pair[0], "attach 30000", {p.write_end});
    LineChannel c(pair[1], pair[1]);
    std::vector<int> fds;
    const auto got = c.read_line_with_fds(1000, fds);
    CHECK(got.status == Status::line);
    CHECK(got.line == "attach 30000");
    REQUIRE(fds.size() == 1);
    CHECK(fds[0] != p.write_end);
    REQUIRE(::write(fds[0], "x\n", 2) == 2);  // the received descriptor is the pipe's write end
    LineChannel reader(p.read_end, -1);
    CHECK(reader.read_line(1000).line == "x");
    ::close(fds[0]);
    ::close(pair[0]);
    ::close(pair[1]);
}
