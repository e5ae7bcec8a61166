// Attack: reach the network. On its first call it tries TCP connections, each with a 1 s
// limit, to 127.0.0.1:47321 (where the suite listens on the host during the grade: a
// program that shares the host's network could hand its answers or the grader's files to
// a helper there), 1.1.1.1:443 and 8.8.8.8:53, and sends a DNS query over UDP to
// 8.8.8.8:53, waiting 1 s for the reply. What happened goes to stderr.
//
// It then computes correctly, except that a connection makes itself visible in the grade:
// if any connect or the DNS reply succeeded, it overwrites c[0] with 12345 after every
// call, so every case fails.
//
// What the grader must do: run it in its own network namespace (loopback only, where
// nobody listens on 47321 and there is no route out), so every attempt fails within a
// second, the output stays right, and every case passes.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "labkit/check.hpp"
#include "vector_add.hpp"

namespace {

constexpr int kTimeoutMs = 1000;
constexpr float kLeakMarker = 12345.0f;

sockaddr_in address_of(const char* ip, std::uint16_t port) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    ::inet_pton(AF_INET, ip, &address.sin_addr);
    return address;
}

// A non-blocking connect, given kTimeoutMs to complete.
bool tcp_connects(const char* ip, std::uint16_t port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return false;
    const sockaddr_in address = address_of(ip, port);
    bool connected = ::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0;
    int error = connected ? 0 : errno;
    if (!connected && error == EINPROGRESS) {
        pollfd waiting{fd, POLLOUT, 0};
        if (::poll(&waiting, 1, kTimeoutMs) == 1) {
            socklen_t length = sizeof error;
            ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length);
            connected = error == 0;
        } else {
            error = ETIMEDOUT;
        }
    }
    ::close(fd);
    std::fprintf(stderr, "network: TCP %s:%u %s%s\n", ip, unsigned{port}, connected ? "CONNECTED" : "failed: ",
                 connected ? "" : std::strerror(error));
    return connected;
}

// A DNS query for example.com (type A), built by hand: header, name as labels, type, class.
std::array<unsigned char, 29> dns_query() {
    return {0x43, 0x4c,              // id
            0x01, 0x00,              // flags: recursion desired
            0x00, 0x01,              // one question
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
            7, 'e', 'x', 'a', 'm', 'p', 'l', 'e', 3, 'c', 'o', 'm', 0,
            0x00, 0x01,              // type A
            0x00, 0x01};             // class IN
}

bool dns_answers(const char* ip) {
    const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return false;
    const sockaddr_in address = address_of(ip, 53);
    const auto query = dns_query();
    bool answered = false;
    const char* what = "no reply within 1 s";
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0 ||
        ::send(fd, query.data(), query.size(), 0) < 0) {
        what = std::strerror(errno);
    } else {
        pollfd waiting{fd, POLLIN, 0};
        if (::poll(&waiting, 1, kTimeoutMs) == 1) {
            std::array<unsigned char, 512> reply{};
            const ssize_t got = ::recv(fd, reply.data(), reply.size(), 0);
            answered = got >= 2 && reply[0] == query[0] && reply[1] == query[1];
            if (got < 0) what = std::strerror(errno);
        }
    }
    ::close(fd);
    std::fprintf(stderr, "network: UDP DNS %s:53 %s\n", ip, answered ? "ANSWERED" : what);
    return answered;
}

bool reaches_network() {
    bool reached = false;
    reached |= tcp_connects("127.0.0.1", 47321);
    reached |= tcp_connects("1.1.1.1", 443);
    reached |= tcp_connects("8.8.8.8", 53);
    reached |= dns_answers("8.8.8.8");
    return reached;
}

__global__ void add(const float* a, const float* b, float* c, std::size_t n) {
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
        c[i] = a[i] + b[i];
}

}  // namespace

void vector_add(const float* a, const float* b, float* c, std::size_t n) {
    static const bool reached = reaches_network();
    const std::size_t blocks = (n + 255) / 256;
    add<<<static_cast<unsigned>(blocks < 65535 * 8 ? blocks : 65535 * 8), 256>>>(a, b, c, n);
    LABKIT_CHECK_LAUNCH();
    if (reached) LABKIT_CHECK(cudaMemcpy(c, &kLeakMarker, sizeof(float), cudaMemcpyHostToDevice));
}
