/*
 * linkemu: a user-space bottleneck link between two tun devices living in two network
 * namespaces (the hscc-trace testbed's replacement for netem, which this kernel lacks).
 *
 * Model, per direction (A->B and B->A independently):
 *   arrival (read from the tun fd) -> Bernoulli loss (TCP segments carrying payload only)
 *   -> drop-tail FIFO (limit in packets and/or bytes; 0 = unlimited)
 *   -> serialization at RATE bit/s (packet length = IP total length)
 *   -> fixed propagation DELAY -> written to the other tun fd.
 * The FIFO is a virtual-time queue: a packet accepted at time t finishes serialization at
 * depart = max(t, previous depart) + 8*len/RATE and is released at depart + DELAY. A packet
 * counts against the queue limit while depart > now (still waiting or being serialized).
 *
 * Field conditions (each off by default; the testbed's run.py exposes them):
 *   --policer-rate-X BPS --policer-burst-X BYTES: a token-bucket policer before the queue (tokens
 *     at BPS, bucket BYTES); a packet larger than the tokens is dropped (RFC 2697's single-rate
 *     policer with one colour).
 *   --codel-X 1 [--codel-target-X NS --codel-interval-X NS --ecn-X 1]: CoDel (RFC 8289) on the
 *     queue instead of the plain FIFO; with --ecn-X an ECT packet CoDel would drop is marked CE
 *     instead (as Linux's codel with ecn). The queue is then served at dequeue time: a packet
 *     waits unscheduled until the link is free, CoDel decides on it at that (virtual) instant
 *     with the backlog that had arrived by then, and only a kept packet is serialized.
 *   --jitter-X NS: each packet's release is delayed by an extra U(0, NS) (xorshift PRNG), never
 *     before the previous packet's (no reordering).
 *   --agg-X NS: releases held to the next multiple of NS on the monotonic clock, so the
 *     packets (ACKs, in the B->A direction) leave in bursts every NS (WiFi/DOCSIS-style ACK
 *     aggregation).
 *
 * Per-flow extra delay (--extra-ba PORT:NS, up to 8): a packet of the B->A direction whose TCP
 * source port is PORT (the ACKs of one flow, sent by its receiver's port) is, once released by
 * the link above, held NS more nanoseconds in a delay line of its own before it is written. The
 * flow's base RTT becomes 2*DELAY + NS while the bottleneck (the A->B queue) stays shared: the
 * HRF-TCP paper's access links of different delay, placed on the ACK path, which has no queue
 * limit and no loss. Each line is a FIFO with one constant delay, so its releases stay in order.
 *
 * One thread; ppoll() with a nanosecond timeout and a 1 ns timer slack; CLOCK_MONOTONIC.
 * Statistics (counts, release lateness histogram = actual write time - scheduled release)
 * are written as JSON to --stats on SIGTERM/SIGINT.
 *
 * Build: gcc -O2 -Wall -o linkemu linkemu.c   (done by samples/testbed/run.py)
 * Usage: linkemu --ns-a /var/run/netns/X --dev-a tunA --ns-b /var/run/netns/Y --dev-b tunB
 *        [--rate-ab BPS] [--delay-ab NS] [--qpkts-ab N] [--qbytes-ab N] [--loss-ab P]
 *        [--rate-ba ...] ... [--extra-ba PORT:NS ...] [--seed N] [--stats FILE] [--rt PRIO]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
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
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#define SLOT 2048
#define NSLOTS 8192 /* per direction; at 20 Mbit/s and 200 ms one-way that is ~330 packets */
#define HIST_US 20000 /* lateness histogram: 1 us bins up to 20 ms, then overflow */

typedef struct {
    uint64_t release_ns, depart_ns, arrive_ns;
    uint32_t len;
    uint32_t dropped; /* CoDel dropped it at dequeue: never written */
    unsigned char data[SLOT];
} pkt_t;

#define NEXTRA 8
#define XSLOTS 4096 /* per extra-delay line: at 100 Mbit/s of data, ~4000 ACKs/s of 100 ms */

typedef struct { /* one flow's extra delay line (B->A) */
    uint16_t port;
    uint64_t delay_ns;
    pkt_t *ring;
    uint32_t head, tail;
    uint64_t pkts, drop_full;
} xline_t;

typedef struct {
    const char *name;
    double rate_bps; /* 0 = infinite */
    uint64_t delay_ns;
    uint32_t qpkts, qbytes; /* 0 = unlimited */
    double loss;
    int in_fd, out_fd;
    pkt_t *ring;
    uint32_t head, tail; /* head = next to release, tail = next free */
    uint32_t qhead;      /* first entry whose depart_ns may still be > now */
    uint64_t qbytes_now;
    uint64_t last_depart;
    /* field conditions */
    double pol_rate_bps;   /* 0 = no policer */
    double pol_burst, pol_tokens;
    uint64_t pol_last_ns;
    int codel, ecn;
    uint64_t codel_target_ns, codel_interval_ns;
    uint64_t jitter_ns, agg_ns, last_release;
    uint32_t sched; /* CoDel: first packet not yet dequeued onto the link */
    uint64_t first_above, drop_next;
    uint32_t count, lastcount;
    int dropping;
    uint64_t drop_police, drop_aqm, ecn_marked;
    /* stats */
    uint64_t rx_pkts, rx_bytes, tx_pkts, tx_bytes, drop_loss, drop_queue, drop_ring, write_err;
    uint64_t max_q_pkts;
    uint64_t first_tx_ns, last_tx_ns;
    uint64_t hist[HIST_US + 1];
    uint64_t late_max_ns;
    xline_t x[NEXTRA];
    int nx;
} dir_t;

static volatile sig_atomic_t stop_flag = 0;
static void on_sig(int s) { (void)s; stop_flag = 1; }

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* xorshift64* PRNG: reproducible Bernoulli loss for a given --seed */
static uint64_t rng_state = 88172645463325252ull;
static double rng_uniform(void) {
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (double)((rng_state * 2685821657736338717ull) >> 11) / 9007199254740992.0;
}

static int open_tun_in_ns(const char *ns_path, const char *dev) {
    int self = open("/proc/self/ns/net", O_RDONLY);
    int ns = open(ns_path, O_RDONLY);
    if (self < 0 || ns < 0) { perror("open netns"); exit(1); }
    if (setns(ns, CLONE_NEWNET) < 0) { perror("setns"); exit(1); }
    int fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK);
    if (fd < 0) { perror("open /dev/net/tun"); exit(1); }
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    ifr.ifr_flags = IFF_TUN | IFF_NO_PI;
    strncpy(ifr.ifr_name, dev, IFNAMSIZ - 1);
    if (ioctl(fd, TUNSETIFF, &ifr) < 0) { perror("TUNSETIFF"); exit(1); }
    if (setns(self, CLONE_NEWNET) < 0) { perror("setns back"); exit(1); }
    close(ns);
    close(self);
    return fd;
}

/* TCP source port of an IPv4 packet, or -1 */
static int tcp_sport(const unsigned char *p, uint32_t n) {
    if (n < 20 || (p[0] >> 4) != 4 || p[9] != 6) return -1;
    uint32_t ihl = (p[0] & 15) * 4;
    if (n < ihl + 4) return -1;
    return (p[ihl] << 8) | p[ihl + 1];
}

static xline_t *xline_of(dir_t *d, const unsigned char *p, uint32_t n) {
    if (!d->nx) return NULL;
    int sp = tcp_sport(p, n);
    for (int i = 0; i < d->nx; i++)
        if (d->x[i].port == sp) return &d->x[i];
    return NULL;
}

static void record_write(dir_t *d, const pkt_t *p, uint64_t due) {
    uint64_t tw = now_ns(); /* lateness is measured when the write starts: writing into a
                               tun runs the receiving stack (and often its reply) inline */
    ssize_t w = write(d->out_fd, p->data, p->len);
    if (w < 0) d->write_err++;
    else { d->tx_pkts++; d->tx_bytes += p->len; }
    uint64_t late = tw > due ? tw - due : 0;
    uint64_t us = late / 1000;
    d->hist[us > HIST_US ? HIST_US : us]++;
    if (late > d->late_max_ns) d->late_max_ns = late;
    if (!d->first_tx_ns) d->first_tx_ns = tw;
    d->last_tx_ns = tw;
}

/* IPv4/IPv6 TCP segment with payload? (loss is applied only to those) */
static int tcp_has_payload(const unsigned char *p, uint32_t n) {
    if (n < 20) return 0;
    int v = p[0] >> 4;
    if (v == 4) {
        uint32_t ihl = (p[0] & 15) * 4, tot = (p[2] << 8) | p[3];
        if (p[9] != 6 || n < ihl + 20) return 0;
        uint32_t thl = (p[ihl + 12] >> 4) * 4;
        return tot > ihl + thl;
    } else if (v == 6) {
        if (n < 60 || p[6] != 6) return 0;
        uint32_t plen = (p[4] << 8) | p[5];
        uint32_t thl = (p[40 + 12] >> 4) * 4;
        return plen > thl;
    }
    return 0;
}

static void advance_queue(dir_t *d, uint64_t t) {
    while (d->qhead != d->tail && d->ring[d->qhead % NSLOTS].depart_ns <= t) {
        d->qbytes_now -= d->ring[d->qhead % NSLOTS].len;
        d->qhead++;
    }
}

/* the release time of a packet that finished serialization at depart: delay, jitter, aggregation */
static uint64_t release_time(dir_t *d, uint64_t depart) {
    uint64_t r = depart + d->delay_ns;
    if (d->jitter_ns) r += (uint64_t)(rng_uniform() * (double)d->jitter_ns);
    if (r < d->last_release) r = d->last_release; /* no reordering */
    if (d->agg_ns) r = (r + d->agg_ns - 1) / d->agg_ns * d->agg_ns;
    d->last_release = r;
    return r;
}

static void schedule_pkt(dir_t *d, pkt_t *p, uint64_t now) {
    uint64_t ser = d->rate_bps > 0 ? (uint64_t)((double)p->len * 8e9 / d->rate_bps + 0.5) : 0;
    p->depart_ns = now + ser;
    p->release_ns = release_time(d, p->depart_ns);
    d->last_depart = p->depart_ns;
}

/* token bucket: 1 = conforming (tokens taken), 0 = drop */
static int police(dir_t *d, uint32_t len, uint64_t t) {
    if (d->pol_rate_bps <= 0) return 1;
    if (!d->pol_last_ns) { d->pol_last_ns = t; d->pol_tokens = d->pol_burst; }
    d->pol_tokens += (double)(t - d->pol_last_ns) * d->pol_rate_bps / 8e9;
    if (d->pol_tokens > d->pol_burst) d->pol_tokens = d->pol_burst;
    d->pol_last_ns = t;
    if ((double)len > d->pol_tokens) return 0;
    d->pol_tokens -= len;
    return 1;
}

/* ---- CoDel (RFC 8289 §5, with ECN marking as Linux include/net/codel_impl.h) ---- */
#define CODEL_MAXPACKET 1514 /* bytes: an MTU-size packet */

static pkt_t *codel_take(dir_t *d, uint64_t now) {
    if (d->sched == d->tail) return NULL;
    pkt_t *p = &d->ring[d->sched % NSLOTS];
    if (p->arrive_ns > now) return NULL; /* not yet arrived at that instant */
    d->sched++;
    return p;
}

/* RFC 8289 dodequeue(): ok_to_drop for packet p dequeued at now */
static int codel_should_drop(dir_t *d, pkt_t *p, uint64_t now) {
    if (!p) { d->first_above = 0; return 0; }
    uint64_t sojourn = now - p->arrive_ns, backlog = 0;
    for (uint32_t i = d->sched; i != d->tail && backlog <= CODEL_MAXPACKET; i++) {
        pkt_t *q = &d->ring[i % NSLOTS];
        if (q->arrive_ns > now) break;
        backlog += q->len;
    }
    if (sojourn < d->codel_target_ns || backlog <= CODEL_MAXPACKET) { d->first_above = 0; return 0; }
    if (d->first_above == 0) { d->first_above = now + d->codel_interval_ns; return 0; }
    return now >= d->first_above;
}

static uint64_t codel_control_law(dir_t *d, uint64_t t) {
    return t + (uint64_t)((double)d->codel_interval_ns / sqrt((double)d->count));
}

/* set CE on an ECT IPv4 packet (RFC 3168 §5), fixing the header checksum (RFC 1624 eq. 3) */
static int ecn_mark(pkt_t *p) {
    unsigned char *h = p->data;
    if (p->len < 20 || (h[0] >> 4) != 4) return 0;
    int ecn = h[1] & 3;
    if (ecn == 0) return 0; /* not ECN-capable */
    if (ecn == 3) return 1; /* already CE */
    uint16_t old = (uint16_t)((h[0] << 8) | h[1]);
    h[1] |= 3;
    uint16_t nw = (uint16_t)((h[0] << 8) | h[1]);
    uint32_t sum = (uint16_t)~((h[10] << 8) | h[11]);
    sum += (uint16_t)~old;
    sum += nw;
    while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
    sum = (uint16_t)~sum;
    h[10] = sum >> 8; h[11] = sum & 0xff;
    return 1;
}

static void codel_drop(dir_t *d, pkt_t *p, uint64_t now) {
    p->dropped = 1;
    p->release_ns = now;
    d->drop_aqm++;
}

/* one dequeue opportunity at virtual time now (the link is free): RFC 8289 dequeue() */
static void codel_dequeue(dir_t *d, uint64_t now) {
    pkt_t *p = codel_take(d, now);
    int drop = codel_should_drop(d, p, now);
    if (!p) { d->dropping = 0; return; }
    if (d->dropping) {
        if (!drop) d->dropping = 0;
        else {
            while (d->dropping && now >= d->drop_next) {
                d->count++;
                if (d->ecn && ecn_mark(p)) {
                    d->ecn_marked++;
                    d->drop_next = codel_control_law(d, d->drop_next);
                    goto end;
                }
                codel_drop(d, p, now);
                p = codel_take(d, now);
                if (!codel_should_drop(d, p, now)) d->dropping = 0;
                else d->drop_next = codel_control_law(d, d->drop_next);
            }
        }
    } else if (drop) {
        if (d->ecn && ecn_mark(p)) d->ecn_marked++;
        else {
            codel_drop(d, p, now);
            p = codel_take(d, now);
            codel_should_drop(d, p, now);
        }
        d->dropping = 1;
        uint32_t delta = d->count - d->lastcount;
        if (delta > 1 && (int64_t)(now - d->drop_next) < (int64_t)(16 * d->codel_interval_ns)) d->count = delta;
        else d->count = 1;
        d->lastcount = d->count;
        d->drop_next = codel_control_law(d, now);
    }
end:
    if (p) schedule_pkt(d, p, now);
}

/* serve every dequeue opportunity that lies at or before t */
static void dequeue_due(dir_t *d, uint64_t t) {
    while (d->sched != d->tail) {
        pkt_t *p = &d->ring[d->sched % NSLOTS];
        uint64_t now = d->last_depart > p->arrive_ns ? d->last_depart : p->arrive_ns;
        if (now > t) break;
        codel_dequeue(d, now);
    }
}

static uint64_t next_dequeue(const dir_t *d) {
    if (!d->codel || d->sched == d->tail) return UINT64_MAX;
    const pkt_t *p = &d->ring[d->sched % NSLOTS];
    return d->last_depart > p->arrive_ns ? d->last_depart : p->arrive_ns;
}

static void on_readable(dir_t *d) {
    for (;;) {
        if (d->tail - d->head >= NSLOTS) { /* ring full: read and drop */
            unsigned char tmp[SLOT];
            ssize_t r = read(d->in_fd, tmp, sizeof tmp);
            if (r <= 0) return;
            d->rx_pkts++; d->rx_bytes += r; d->drop_ring++;
            continue;
        }
        pkt_t *p = &d->ring[d->tail % NSLOTS];
        ssize_t r = read(d->in_fd, p->data, SLOT);
        if (r <= 0) return;
        uint64_t t = now_ns();
        d->rx_pkts++; d->rx_bytes += r;
        if (d->loss > 0 && tcp_has_payload(p->data, r) && rng_uniform() < d->loss) {
            d->drop_loss++;
            continue;
        }
        if (!police(d, (uint32_t)r, t)) {
            d->drop_police++;
            continue;
        }
        if (d->codel) { /* queue served at dequeue time (CoDel) */
            dequeue_due(d, t);
            uint32_t qn = d->tail - d->sched + (d->last_depart > t ? 1 : 0);
            if (d->qpkts && qn >= d->qpkts) {
                d->drop_queue++;
                continue;
            }
            p->len = (uint32_t)r;
            p->arrive_ns = t;
            p->dropped = 0;
            d->tail++;
            if (qn + 1 > d->max_q_pkts) d->max_q_pkts = qn + 1;
            continue;
        }
        advance_queue(d, t);
        uint32_t qn = d->tail - d->qhead;
        if ((d->qpkts && qn >= d->qpkts) || (d->qbytes && d->qbytes_now + r > d->qbytes)) {
            d->drop_queue++;
            continue;
        }
        uint64_t start = d->last_depart > t ? d->last_depart : t;
        uint64_t ser = d->rate_bps > 0 ? (uint64_t)((double)r * 8e9 / d->rate_bps + 0.5) : 0;
        p->len = (uint32_t)r;
        p->arrive_ns = t;
        p->dropped = 0;
        p->depart_ns = start + ser;
        p->release_ns = release_time(d, p->depart_ns);
        d->last_depart = p->depart_ns;
        d->qbytes_now += r;
        d->tail++;
        if (qn + 1 > d->max_q_pkts) d->max_q_pkts = qn + 1;
    }
}

static void release_due(dir_t *d, uint64_t t) {
    uint32_t limit = d->codel ? d->sched : d->tail; /* with CoDel only dequeued packets */
    while (d->head != limit && d->ring[d->head % NSLOTS].release_ns <= t) {
        pkt_t *p = &d->ring[d->head % NSLOTS];
        if (p->dropped) { /* CoDel dropped it at dequeue */
            d->head++;
            continue;
        }
        xline_t *x = xline_of(d, p->data, p->len);
        if (x) { /* the flow's extra delay: into its own line, written when that is due */
            if (x->tail - x->head >= XSLOTS) x->drop_full++;
            else {
                pkt_t *q = &x->ring[x->tail % XSLOTS];
                memcpy(q->data, p->data, p->len);
                q->len = p->len;
                q->release_ns = p->release_ns + x->delay_ns;
                x->tail++;
                x->pkts++;
            }
        } else
            record_write(d, p, p->release_ns);
        if (!d->codel && d->qhead == d->head) { /* keep qhead >= head */
            d->qbytes_now -= p->len;
            d->qhead++;
        }
        d->head++;
    }
    for (int i = 0; i < d->nx; i++) {
        xline_t *x = &d->x[i];
        while (x->head != x->tail && x->ring[x->head % XSLOTS].release_ns <= t) {
            pkt_t *q = &x->ring[x->head % XSLOTS];
            record_write(d, q, q->release_ns);
            x->head++;
        }
    }
}

/* the earliest pending release of a direction (main ring and extra lines), or UINT64_MAX */
static uint64_t next_release(const dir_t *d) {
    uint64_t next = d->head != d->tail ? d->ring[d->head % NSLOTS].release_ns : UINT64_MAX;
    for (int i = 0; i < d->nx; i++) {
        const xline_t *x = &d->x[i];
        if (x->head != x->tail && x->ring[x->head % XSLOTS].release_ns < next)
            next = x->ring[x->head % XSLOTS].release_ns;
    }
    return next;
}

static double pct(const dir_t *d, double q) {
    uint64_t n = 0, acc = 0;
    for (int i = 0; i <= HIST_US; i++) n += d->hist[i];
    if (!n) return 0;
    uint64_t target = (uint64_t)(q * n);
    for (int i = 0; i <= HIST_US; i++) {
        acc += d->hist[i];
        if (acc > target) return i + 0.5;
    }
    return HIST_US;
}

static void dump_dir(FILE *f, const dir_t *d) {
    fprintf(f,
            "\"%s\": {\"rate_bps\": %.0f, \"delay_ns\": %llu, \"queue_pkts\": %u, \"queue_bytes\": %u, "
            "\"loss\": %g, \"rx_pkts\": %llu, \"rx_bytes\": %llu, \"tx_pkts\": %llu, \"tx_bytes\": %llu, "
            "\"drop_loss\": %llu, \"drop_queue\": %llu, \"drop_ring\": %llu, \"write_err\": %llu, "
            "\"max_queue_pkts\": %llu, \"drop_police\": %llu, \"drop_aqm\": %llu, \"ecn_marked\": %llu, "
            "\"policer_rate_bps\": %.0f, \"policer_burst_bytes\": %.0f, \"codel\": %d, \"ecn\": %d, "
            "\"codel_target_ns\": %llu, \"codel_interval_ns\": %llu, \"jitter_ns\": %llu, \"agg_ns\": %llu, "
            "\"release_late_us\": {\"p50\": %.1f, \"p90\": %.1f, \"p99\": %.1f, "
            "\"p999\": %.1f, \"max\": %.1f}",
            d->name, d->rate_bps, (unsigned long long)d->delay_ns, d->qpkts, d->qbytes, d->loss,
            (unsigned long long)d->rx_pkts, (unsigned long long)d->rx_bytes, (unsigned long long)d->tx_pkts,
            (unsigned long long)d->tx_bytes, (unsigned long long)d->drop_loss,
            (unsigned long long)d->drop_queue, (unsigned long long)d->drop_ring,
            (unsigned long long)d->write_err, (unsigned long long)d->max_q_pkts,
            (unsigned long long)d->drop_police, (unsigned long long)d->drop_aqm, (unsigned long long)d->ecn_marked,
            d->pol_rate_bps, d->pol_burst, d->codel, d->ecn, (unsigned long long)d->codel_target_ns,
            (unsigned long long)d->codel_interval_ns, (unsigned long long)d->jitter_ns,
            (unsigned long long)d->agg_ns, pct(d, 0.5), pct(d, 0.9),
            pct(d, 0.99), pct(d, 0.999), d->late_max_ns / 1000.0);
    if (d->nx) {
        fprintf(f, ", \"extra_delay\": [");
        for (int i = 0; i < d->nx; i++)
            fprintf(f, "%s{\"tcp_sport\": %u, \"delay_ns\": %llu, \"pkts\": %llu, \"drop_full\": %llu}",
                    i ? ", " : "", d->x[i].port, (unsigned long long)d->x[i].delay_ns,
                    (unsigned long long)d->x[i].pkts, (unsigned long long)d->x[i].drop_full);
        fprintf(f, "]");
    }
}

int main(int argc, char **argv) {
    static dir_t ab = {.name = "a_to_b"}, ba = {.name = "b_to_a"};
    const char *ns_a = NULL, *ns_b = NULL, *dev_a = NULL, *dev_b = NULL, *stats = NULL;
    uint64_t seed = 1;
    int rt = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *k = argv[i], *v = argv[i + 1];
        if (!strcmp(k, "--ns-a")) ns_a = v;
        else if (!strcmp(k, "--ns-b")) ns_b = v;
        else if (!strcmp(k, "--dev-a")) dev_a = v;
        else if (!strcmp(k, "--dev-b")) dev_b = v;
        else if (!strcmp(k, "--stats")) stats = v;
        else if (!strcmp(k, "--seed")) seed = strtoull(v, NULL, 10);
        else if (!strcmp(k, "--rt")) rt = atoi(v);
        else if (!strcmp(k, "--rate-ab")) ab.rate_bps = atof(v);
        else if (!strcmp(k, "--rate-ba")) ba.rate_bps = atof(v);
        else if (!strcmp(k, "--delay-ab")) ab.delay_ns = strtoull(v, NULL, 10);
        else if (!strcmp(k, "--delay-ba")) ba.delay_ns = strtoull(v, NULL, 10);
        else if (!strcmp(k, "--qpkts-ab")) ab.qpkts = atoi(v);
        else if (!strcmp(k, "--qpkts-ba")) ba.qpkts = atoi(v);
        else if (!strcmp(k, "--qbytes-ab")) ab.qbytes = atoi(v);
        else if (!strcmp(k, "--qbytes-ba")) ba.qbytes = atoi(v);
        else if (!strcmp(k, "--loss-ab")) ab.loss = atof(v);
        else if (!strcmp(k, "--loss-ba")) ba.loss = atof(v);
        else if (!strcmp(k, "--policer-rate-ab")) ab.pol_rate_bps = atof(v);
        else if (!strcmp(k, "--policer-burst-ab")) ab.pol_burst = atof(v);
        else if (!strcmp(k, "--codel-ab")) ab.codel = atoi(v);
        else if (!strcmp(k, "--ecn-ab")) ab.ecn = atoi(v);
        else if (!strcmp(k, "--codel-target-ab")) ab.codel_target_ns = strtoull(v, NULL, 10);
        else if (!strcmp(k, "--codel-interval-ab")) ab.codel_interval_ns = strtoull(v, NULL, 10);
        else if (!strcmp(k, "--jitter-ab")) ab.jitter_ns = strtoull(v, NULL, 10);
        else if (!strcmp(k, "--jitter-ba")) ba.jitter_ns = strtoull(v, NULL, 10);
        else if (!strcmp(k, "--agg-ab")) ab.agg_ns = strtoull(v, NULL, 10);
        else if (!strcmp(k, "--agg-ba")) ba.agg_ns = strtoull(v, NULL, 10);
        else if (!strcmp(k, "--extra-ba")) {
            unsigned port;
            unsigned long long ns;
            if (ba.nx >= NEXTRA || sscanf(v, "%u:%llu", &port, &ns) != 2 || port > 65535) {
                fprintf(stderr, "linkemu: bad --extra-ba %s (PORT:NS, at most %d)\n", v, NEXTRA);
                return 2;
            }
            xline_t *x = &ba.x[ba.nx++];
            x->port = (uint16_t)port;
            x->delay_ns = ns;
            x->ring = calloc(XSLOTS, sizeof(pkt_t));
            if (!x->ring) { perror("calloc"); return 1; }
        }
        else { fprintf(stderr, "linkemu: unknown option %s\n", k); return 2; }
    }
    if (!ns_a || !ns_b || !dev_a || !dev_b) {
        fprintf(stderr, "linkemu: --ns-a --dev-a --ns-b --dev-b are required\n");
        return 2;
    }
    if (ab.codel && !ab.codel_target_ns) ab.codel_target_ns = 5000000ull;     /* RFC 8289 §4.4: 5 ms */
    if (ab.codel && !ab.codel_interval_ns) ab.codel_interval_ns = 100000000ull; /* §4.5: 100 ms */
    rng_state ^= seed * 0x9E3779B97F4A7C15ull;
    if (!rng_state) rng_state = 1;
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    if (rt > 0) {
        struct sched_param sp = {.sched_priority = rt};
        if (sched_setscheduler(0, SCHED_FIFO, &sp) < 0) perror("sched_setscheduler (continuing)");
    }
    int fa = open_tun_in_ns(ns_a, dev_a), fb = open_tun_in_ns(ns_b, dev_b);
    ab.in_fd = fa; ab.out_fd = fb;
    ba.in_fd = fb; ba.out_fd = fa;
    ab.ring = calloc(NSLOTS, sizeof(pkt_t));
    ba.ring = calloc(NSLOTS, sizeof(pkt_t));
    if (!ab.ring || !ba.ring) { perror("calloc"); return 1; }
    signal(SIGTERM, on_sig);
    signal(SIGINT, on_sig);
    printf("ready\n");
    fflush(stdout);

    struct pollfd pfd[2] = {{.fd = fa, .events = POLLIN}, {.fd = fb, .events = POLLIN}};
    while (!stop_flag) {
        uint64_t t = now_ns();
        release_due(&ab, t);
        release_due(&ba, t);
        uint64_t next = next_release(&ba);
        if (ab.codel) { /* dequeue opportunities; with CoDel the head may still be unscheduled */
            dequeue_due(&ab, t);
            if (ab.head != ab.sched && ab.ring[ab.head % NSLOTS].release_ns < next)
                next = ab.ring[ab.head % NSLOTS].release_ns;
            uint64_t nd = next_dequeue(&ab);
            if (nd < next) next = nd;
        } else {
            uint64_t na = next_release(&ab);
            if (na < next) next = na;
        }
        struct timespec to, *top = NULL;
        if (next != UINT64_MAX) {
            uint64_t t2 = now_ns();
            uint64_t dt = next > t2 ? next - t2 : 0;
            to.tv_sec = dt / 1000000000ull;
            to.tv_nsec = dt % 1000000000ull;
            top = &to;
        }
        int r = ppoll(pfd, 2, top, NULL);
        if (r < 0) {
            if (errno == EINTR) continue;
            perror("ppoll");
            break;
        }
        if (pfd[0].revents & POLLIN) on_readable(&ab);
        if (pfd[1].revents & POLLIN) on_readable(&ba);
    }
    if (stats) {
        FILE *f = fopen(stats, "w");
        if (f) {
            fprintf(f, "{");
            dump_dir(f, &ab);
            fprintf(f, "}, ");
            dump_dir(f, &ba);
            fprintf(f, "}");
            fprintf(f, ", \"seed\": %llu}\n", (unsigned long long)seed);
            fclose(f);
        }
    }
    return 0;
}
