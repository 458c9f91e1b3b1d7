/* netem_relay.c: netem's delay, jitter and loss in user space, for kernels built
 * without sch_netem (the emulated cluster's own machine: "Specified qdisc kind is
 * unknown"). tests/cluster/netns-netem.sh uses tc netem where the kernel has it and
 * this relay otherwise; the behaviour is the same subset of netem's:
 *
 *   netem_relay NODE_NS FAB_NS PORT [delay D [J]] [loss P%] [limit N] [seed S]
 *
 * It opens two TAP devices, eth0 in network namespace NODE_NS (the node's link) and
 * PORT in FAB_NS (the bridge's side), and carries every Ethernet frame from one to
 * the other: a frame is dropped with probability P, or sent D +- J later (uniform,
 * as netem without a distribution table; frames may overtake each other, as under
 * netem with jitter). Each direction queues at most N frames (netem's limit, 1000);
 * beyond it a frame is dropped. So each direction of the link is impaired once, as
 * netem on both the node's eth0 and its bridge port would do.
 *
 * The caller (netns-netem.sh) addresses eth0 and puts PORT on the bridge once the
 * relay printed "ready"; both devices vanish when the relay ends (SIGTERM, SIGKILL,
 * or netns-down.sh killing what is left in FAB_NS, where the relay stays). TAP
 * devices carry frames of at most the MTU (no offloads are asked for), so every
 * frame fits a 2 KiB slot. Needs root (setns, /dev/net/tun). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#define SLOT_BYTES 2048

typedef struct {
  uint64_t due_ns, seq; /* seq keeps frames of equal due time in arrival order */
  int to;               /* 0: towards the node's eth0, 1: towards the bridge */
  int len;
  unsigned char data[SLOT_BYTES];
} frame_t;

static frame_t *slots;     /* limit * 2 frames */
static int *heap, heap_len; /* indices into slots, ordered by (due_ns, seq) */
static int *free_list, free_len;
static int queued[2];
static uint64_t rng = 0x9e3779b97f4a7c15ull;
static volatile sig_atomic_t stop;

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static double uniform01(void) { /* xorshift64* */
  rng ^= rng >> 12, rng ^= rng << 25, rng ^= rng >> 27;
  return (double)((rng * 2685821657736338717ull) >> 11) / 9007199254740992.0;
}

static int before(int a, int b) {
  return slots[a].due_ns < slots[b].due_ns || (slots[a].due_ns == slots[b].due_ns && slots[a].seq < slots[b].seq);
}

static void heap_push(int s) {
  int i = heap_len++;
  heap[i] = s;
  while (i > 0 && before(heap[i], heap[(i - 1) / 2])) {
    int p = (i - 1) / 2, t = heap[p];
    heap[p] = heap[i], heap[i] = t, i = p;
  }
}

static int heap_pop(void) {
  int top = heap[0], i = 0;
  heap[0] = heap[--heap_len];
  for (;;) {
    int l = 2 * i + 1, r = l + 1, m = i;
    if (l < heap_len && before(heap[l], heap[m])) m = l;
    if (r < heap_len && before(heap[r], heap[m])) m = r;
    if (m == i) return top;
    int t = heap[m];
    heap[m] = heap[i], heap[i] = t, i = m;
  }
}

/* A TAP device named `name` in the network namespace /run/netns/`ns`: the device
 * lives in the namespace the TUNSETIFF call is made from. */
static int tap_open(const char *ns, const char *name) {
  char path[300];
  snprintf(path, sizeof path, "/run/netns/%s", ns);
  int nsfd = open(path, O_RDONLY | O_CLOEXEC);
  if (nsfd < 0 || setns(nsfd, CLONE_NEWNET) != 0) {
    fprintf(stderr, "netem_relay: cannot enter %s: %s\n", path, strerror(errno));
    exit(1);
  }
  close(nsfd);
  int fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
  struct ifreq ifr;
  memset(&ifr, 0, sizeof ifr);
  ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
  snprintf(ifr.ifr_name, IFNAMSIZ, "%s", name);
  if (fd < 0 || ioctl(fd, TUNSETIFF, &ifr) != 0) {
    fprintf(stderr, "netem_relay: cannot make TAP device %s in %s: %s\n", name, ns, strerror(errno));
    exit(1);
  }
  return fd;
}

static double parse_time_s(const char *s) { /* 35ms, 2s, 500us */
  char *end;
  double v = strtod(s, &end);
  if (!strcmp(end, "ms")) return v / 1e3;
  if (!strcmp(end, "us")) return v / 1e6;
  if (!strcmp(end, "s") || !*end) return v;
  fprintf(stderr, "netem_relay: bad time '%s' (e.g. 35ms)\n", s);
  exit(2);
}

static void on_signal(int sig) {
  (void)sig;
  stop = 1;
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: netem_relay NODE_NS FAB_NS PORT [delay D [J]] [loss P%%] [limit N] [seed S]\n");
    return 2;
  }
  double delay_s = 0, jitter_s = 0, loss = 0;
  int limit = 1000;
  rng ^= (uint64_t)getpid() << 17 ^ now_ns();
  for (int i = 4; i < argc; i++) {
    if (!strcmp(argv[i], "delay") && i + 1 < argc) {
      delay_s = parse_time_s(argv[++i]);
      if (i + 1 < argc && argv[i + 1][0] >= '0' && argv[i + 1][0] <= '9') jitter_s = parse_time_s(argv[++i]);
    } else if (!strcmp(argv[i], "loss") && i + 1 < argc) {
      loss = strtod(argv[++i], NULL) / 100.0;
    } else if (!strcmp(argv[i], "limit") && i + 1 < argc) {
      limit = atoi(argv[++i]);
    } else if (!strcmp(argv[i], "seed") && i + 1 < argc) {
      rng = strtoull(argv[++i], NULL, 0) | 1;
    } else {
      fprintf(stderr, "netem_relay: unknown or incomplete '%s' (delay D [J], loss P%%, limit N, seed S)\n", argv[i]);
      return 2;
    }
  }
  if (limit < 1 || delay_s < 0 || jitter_s < 0 || jitter_s > delay_s || loss < 0 || loss > 1) {
    fprintf(stderr, "netem_relay: need limit >= 1, 0 <= jitter <= delay, loss 0-100%%\n");
    return 2;
  }
  slots = calloc((size_t)limit * 2, sizeof *slots);
  heap = calloc((size_t)limit * 2, sizeof *heap);
  free_list = calloc((size_t)limit * 2, sizeof *free_list);
  if (!slots || !heap || !free_list) return 1;
  for (int i = 0; i < limit * 2; i++) free_list[free_len++] = i;

  int fd[2];
  fd[0] = tap_open(argv[1], "eth0"); /* the node's end */
  fd[1] = tap_open(argv[2], argv[3]); /* the bridge's end; the relay stays in FAB_NS */
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  printf("ready\n");
  fflush(stdout);

  uint64_t seq = 0, dropped = 0, carried = 0;
  struct pollfd pfd[2] = {{fd[0], POLLIN, 0}, {fd[1], POLLIN, 0}};
  while (!stop) {
    uint64_t t = now_ns();
    while (heap_len > 0 && slots[heap[0]].due_ns <= t) {
      int s = heap_pop();
      /* A TAP write hands the frame to the kernel's receive path at once. */
      if (write(fd[slots[s].to], slots[s].data, (size_t)slots[s].len) == slots[s].len) carried++;
      queued[slots[s].to]--;
      free_list[free_len++] = s;
    }
    struct timespec wait = {0, 100000000}; /* at most 100 ms: SIGTERM is seen then too */
    if (heap_len > 0) {
      uint64_t d = slots[heap[0]].due_ns - t;
      if (d < 100000000ull) wait.tv_nsec = (long)d;
    }
    if (ppoll(pfd, 2, &wait, NULL) < 0 && errno != EINTR) break;
    for (int from = 0; from < 2; from++) {
      if (!(pfd[from].revents & POLLIN)) continue;
      for (int burst = 0; burst < 64; burst++) { /* drain what is there, fairly */
        int to = 1 - from;
        if (queued[to] >= limit || free_len == 0) {
          unsigned char sink[SLOT_BYTES];
          if (read(fd[from], sink, sizeof sink) <= 0) break;
          dropped++; /* over the limit: dropped, as netem does */
          continue;
        }
        int s = free_list[free_len - 1];
        ssize_t n = read(fd[from], slots[s].data, SLOT_BYTES);
        if (n <= 0) break;
        if (loss > 0 && uniform01() < loss) {
          dropped++;
          continue;
        }
        free_len--;
        double d = delay_s + (jitter_s > 0 ? (2 * uniform01() - 1) * jitter_s : 0);
        slots[s].due_ns = now_ns() + (uint64_t)(d * 1e9);
        slots[s].seq = seq++;
        slots[s].to = to;
        slots[s].len = (int)n;
        queued[to]++;
        heap_push(s);
      }
    }
  }
  fprintf(stderr, "netem_relay: %llu frames carried, %llu dropped\n", (unsigned long long)carried,
          (unsigned long long)dropped);
  return 0;
}
