// Text lines over file descriptors, the way the grader's timing protocol speaks
// (docs/architecture.md, "Paced timing"): one message per line of at most kMaxLine
// printable ASCII bytes. Reading never blocks past a deadline and never trusts the other
// side: a line that is too long, not text, or missing when the deadline passes is
// reported as such, and whatever arrives unasked can be told apart from an answer.
// File descriptors can travel with a line over a Unix socket (SCM_RIGHTS): that is how
// the auditor hands its shared device memory to the grader and gets the program's pipes.
#pragma once

#include <string>
#include <vector>

namespace labkit {

class LineChannel {
public:
    static constexpr std::size_t kMaxLine = 4096;

    enum class Status { line, closed, timed_out, too_long, not_text };
    struct Read {
        Status status;
        std::string line;  // the line (without its newline) when status is line
    };

    // Reads from `in` and writes to `out` (the same descriptor for a socket). Owns neither.
    LineChannel(int in, int out) : in_(in), out_(out) {}

    // The next line, waiting at most `timeout_ms` (< 0: forever). The first `spin_us`
    // microseconds poll without sleeping, so that an answer that comes quickly is seen at
    // once rather than after the scheduler wakes the reader.
    Read read_line(int timeout_ms, int spin_us = 0);

    // True when something is already there to read (buffered, or waiting on `in`, or the
    // other side closed): for a program that must say nothing until it is asked.
    bool has_unasked_input();

    // What is buffered and readable right now, up to `limit` bytes, printable characters
    // kept and the rest shown as '?': for a message that quotes what the other side sent.
    std::string drain_for_message(std::size_t limit = 80);

    // The whole line and its newline; false when the other side has gone (EPIPE).
    bool write_line(const std::string& line);

    int in() const { return in_; }
    int out() const { return out_; }

    // A Unix socket only: the next line together with the descriptors that came with it.
    Read read_line_with_fds(int timeout_ms, std::vector<int>& fds);

private:
    Read next_line(int timeout_ms, int spin_us, std::vector<int>* fds);
    bool fill(int timeout_ms, int spin_us, std::vector<int>* fds);
    int in_, out_;
    std::string buffer_;
    bool closed_ = false;
};

// Sends `line` and its newline over the Unix socket `socket`, with `fds` attached (they
// arrive in the other process as new descriptors). Throws std::runtime_error on failure.
void send_line_with_fds(int socket, const std::string& line, const std::vector<int>& fds);

// The words of a protocol line, split at spaces.
std::vector<std::string> split_words(const std::string& line);

// Printable ASCII, no control characters: what a protocol line may hold.
bool is_protocol_text(const std::string& text);

// `text` shortened to `limit` characters with anything unprintable shown as '?', for
// quoting something a program sent in a message a person reads.
std::string quote_for_message(const std::string& text, std::size_t limit = 80);

}  // namespace labkit
