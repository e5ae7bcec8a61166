#include "labkit/line_channel.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <sstream>
#include <stdexcept>

namespace labkit {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::size_t kMaxFdsPerMessage = 8;

// poll() for input on `fd` for at most `timeout_ms` (0: just look); true when there is
// something to read or the other side closed.
bool readable(int fd, int timeout_ms) {
    pollfd p{fd, POLLIN, 0};
    for (;;) {
        const int got = ::poll(&p, 1, timeout_ms);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) throw std::runtime_error(std::string("poll failed: ") + std::strerror(errno));
        return got > 0;
    }
}

}  // namespace

std::vector<std::string> split_words(const std::string& line) {
    std::istringstream in(line);
    std::vector<std::string> out;
    for (std::string w; in >> w;) out.push_back(w);
    return out;
}

bool is_protocol_text(const std::string& text) {
    for (const unsigned char c : text)
        if (c < 0x20 || c > 0x7E) return false;
    return true;
}

std::string quote_for_message(const std::string& text, std::size_t limit) {
    std::string out;
    for (const unsigned char c : text.substr(0, limit)) out += (c >= 0x20 && c <= 0x7E) ? static_cast<char>(c) : '?';
    if (text.size() > limit) out += "...";
    return out;
}

// Reads what is there (after waiting at most timeout_ms, spinning for the first spin_us)
// into the buffer; false when nothing came in time. Sets closed_ at the end of input.
bool LineChannel::fill(int timeout_ms, int spin_us, std::vector<int>* fds) {
    const auto start = Clock::now();
    const auto spin_until = start + std::chrono::microseconds(spin_us);
    const auto deadline = start + std::chrono::milliseconds(std::max(timeout_ms, 0));
    for (;;) {
        int wait_ms = 0;  // while spinning: only look
        if (const auto now = Clock::now(); now >= spin_until) {
            wait_ms = timeout_ms < 0 ? -1
                                     : static_cast<int>(std::max<long long>(
                                           0, std::chrono::ceil<std::chrono::milliseconds>(deadline - now).count()));
        }
        if (!readable(in_, wait_ms)) {
            if (timeout_ms >= 0 && Clock::now() >= deadline) return false;
            continue;
        }
        char chunk[4096];
        ssize_t got = 0;
        if (fds != nullptr) {
            iovec iov{chunk, sizeof chunk};
            alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFdsPerMessage)];
            msghdr msg{};
            msg.msg_iov = &iov;
            msg.msg_iovlen = 1;
            msg.msg_control = control;
            msg.msg_controllen = sizeof control;
            got = ::recvmsg(in_, &msg, MSG_CMSG_CLOEXEC);
            if (got >= 0) {
                for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
                    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
                    const std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                    for (std::size_t i = 0; i < count; ++i) {
                        int fd = -1;
                        std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
                        fds->push_back(fd);
                    }
                }
            }
        } else {
            got = ::read(in_, chunk, sizeof chunk);
        }
        if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (got < 0 && errno != ECONNRESET) throw std::runtime_error(std::string("read failed: ") + std::strerror(errno));
        if (got <= 0) {
            closed_ = true;
            return true;
        }
        buffer_.append(chunk, static_cast<std::size_t>(got));
        return true;
    }
}

LineChannel::Read LineChannel::next_line(int timeout_ms, int spin_us, std::vector<int>* fds) {
    const auto deadline = Clock::now() + std::chrono::milliseconds(std::max(timeout_ms, 0));
    for (;;) {
        if (const auto nl = buffer_.find('\n'); nl != std::string::npos) {
            std::string line = buffer_.substr(0, nl);
            buffer_.erase(0, nl + 1);
            if (line.size() > kMaxLine) return {Status::too_long, {}};
            if (!is_protocol_text(line)) return {Status::not_text, line};
            return {Status::line, line};
        }
        if (buffer_.size() > kMaxLine) return {Status::too_long, {}};
        if (closed_) return {Status::closed, {}};
        int left_ms = -1;
        if (timeout_ms >= 0)
            left_ms = static_cast<int>(std::max<long long>(
                0, std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count()));
        if (!fill(left_ms, spin_us, fds)) return {Status::timed_out, {}};
        spin_us = 0;
    }
}

LineChannel::Read LineChannel::read_line(int timeout_ms, int spin_us) { return next_line(timeout_ms, spin_us, nullptr); }

LineChannel::Read LineChannel::read_line_with_fds(int timeout_ms, std::vector<int>& fds) {
    return next_line(timeout_ms, 0, &fds);
}

bool LineChannel::has_unasked_input() {
    return !buffer_.empty() || closed_ || readable(in_, 0);
}

std::string LineChannel::drain_for_message(std::size_t limit) {
    while (!closed_ && buffer_.size() < limit && readable(in_, 0)) fill(0, 0, nullptr);
    std::string text = quote_for_message(buffer_, limit);
    buffer_.clear();
    return text;
}

bool LineChannel::write_line(const std::string& line) {
    const std::string text = line + "\n";
    std::size_t done = 0;
    while (done < text.size()) {
        const ssize_t wrote = ::write(out_, text.data() + done, text.size() - done);
        if (wrote < 0 && errno == EINTR) continue;
        if (wrote < 0 && (errno == EPIPE || errno == ECONNRESET)) return false;
        if (wrote <= 0) throw std::runtime_error(std::string("write failed: ") + std::strerror(errno));
        done += static_cast<std::size_t>(wrote);
    }
    return true;
}

void send_line_with_fds(int socket, const std::string& line, const std::vector<int>& fds) {
    if (fds.size() > kMaxFdsPerMessage) throw std::logic_error("too many descriptors for one message");
    const std::string text = line + "\n";
    iovec iov{const_cast<char*>(text.data()), text.size()};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFdsPerMessage)] = {};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    if (!fds.empty()) {
        msg.msg_control = control;
        msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
        cmsghdr* c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
        std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
    }
    for (;;) {
        const ssize_t sent = ::sendmsg(socket, &msg, MSG_NOSIGNAL);
        if (sent < 0 && errno == EINTR) continue;
        if (sent < 0) throw std::runtime_error(std::string("sendmsg failed: ") + std::strerror(errno));
        if (static_cast<std::size_t>(sent) != text.size())
            throw std::runtime_error("sendmsg sent part of a control line");
        return;
    }
}

}  // namespace labkit
