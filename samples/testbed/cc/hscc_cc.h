/* SPDX-License-Identifier: GPL-2.0 */
/*
 * hscc_cc.h: what every BPF congestion control of the hscc-trace testbed shares.
 *
 * Each samples/testbed/cc/<algo>.c is a struct_ops tcp_congestion_ops written from its paper, RFC
 * or Linux module (cited rule by rule in the file) and built by samples/testbed/bpfcc.py with
 *     clang -target bpf -O2 -g -I<build dir with vmlinux.h> -Isamples/testbed/cc -c <algo>.c
 * (vmlinux.h from `bpftool btf dump file /sys/kernel/btf/vmlinux format c`), then registered with
 * `bpftool struct_ops register <algo>.o`: the algorithm then appears in
 * net.ipv4.tcp_available_congestion_control under its name (bpf_<algo>) and a socket selects it
 * with setsockopt(TCP_CONGESTION). The testbed unregisters it after the run.
 *
 * This header provides
 *   - the kernel's kfuncs for BPF congestion controls (net/ipv4/bpf_tcp_ca.c, tcp_cubic.c),
 *   - BPF versions of the static inlines of include/net/tcp.h the Linux modules use
 *     (tcp_in_slow_start, tcp_is_cwnd_limited, tcp_current_ssthresh, before/after, ...),
 *   - integer helpers (isqrt64) and jiffies (HZ is passed by the build: -DHSCC_HZ=<CONFIG_HZ>),
 *   - the signal dump: SIG(ev, fmt, ...) emits one bpf_trace_printk line
 *         "hscc_sig <sport> <ev> <field> <field> ..."
 *     that the testbed records in its private tracefs instance (same clock as tcp_probe) and turns
 *     into truth_signals.parquet. The names of the fields are declared once per file in a comment
 *     line "hscc-signals: name[:Qn] ..." (Qn: the integer is a fixed-point number with n
 *     fractional bits); bpfcc.py reads that line, so the dump and its description cannot drift.
 *
 * BPF has no floating point: every window below is an integer number of packets or a fixed-point
 * number (Q16: 1/65536 packet), every time an integer number of µs (or jiffies where the Linux
 * module counts jiffies). Each file says where this loses precision and by how much.
 */
#ifndef HSCC_CC_H
#define HSCC_CC_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#ifndef HSCC_HZ
#define HSCC_HZ 250
#endif
#define USEC_PER_SEC 1000000U
#define USEC_PER_JIFFY (USEC_PER_SEC / HSCC_HZ)
#define TCP_INFINITE_SSTHRESH 0x7fffffff
#define ICSK_CA_PRIV_BYTES (13 * 8) /* sizeof(icsk_ca_priv): private state must fit here */

/* kfuncs the kernel offers BPF congestion controls (net/ipv4/bpf_tcp_ca.c) */
extern __u32 tcp_slow_start(struct tcp_sock *tp, __u32 acked) __ksym;
extern void tcp_cong_avoid_ai(struct tcp_sock *tp, __u32 w, __u32 acked) __ksym;
extern __u32 tcp_reno_ssthresh(struct sock *sk) __ksym;
extern __u32 tcp_reno_undo_cwnd(struct sock *sk) __ksym;
extern void tcp_reno_cong_avoid(struct sock *sk, __u32 ack, __u32 acked) __ksym;

/* signal event codes (second field of every hscc_sig line) */
enum hscc_ev {
	EV_INIT = 0,	/* .init */
	EV_ACK = 1,	/* .cong_avoid: after this ACK's growth */
	EV_ROUND = 2,	/* a once-per-round adjustment (Vegas-style round end) */
	EV_LOSS = 3,	/* .ssthresh: a congestion event (recovery, CWR or RTO) */
	EV_STATE = 4,	/* .set_state */
	EV_UNDO = 5,	/* .undo_cwnd */
	EV_CWND_EVENT = 6, /* .cwnd_event */
};

static __always_inline struct tcp_sock *tcp_sk(const struct sock *sk)
{
	return (struct tcp_sock *)sk;
}

static __always_inline struct inet_connection_sock *inet_csk(const struct sock *sk)
{
	return (struct inet_connection_sock *)sk;
}

static __always_inline void *inet_csk_ca(const struct sock *sk)
{
	return (void *)inet_csk(sk)->icsk_ca_priv;
}

static __always_inline __u32 hscc_sport(const struct sock *sk)
{
	return sk->__sk_common.skc_num;
}

static __always_inline __u8 hscc_ca_state(const struct sock *sk)
{
	return BPF_CORE_READ_BITFIELD(inet_csk(sk), icsk_ca_state);
}

#define SIG(ev, fmt, args...) bpf_printk("hscc_sig %u %u " fmt, hscc_sport(sk), (__u32)(ev), ##args)

#define min(a, b) ((a) < (b) ? (a) : (b))
#define max(a, b) ((a) > (b) ? (a) : (b))

static __always_inline bool before(__u32 seq1, __u32 seq2)
{
	return (__s32)(seq1 - seq2) < 0;
}
#define after(seq2, seq1) before(seq1, seq2)

/* include/net/tcp.h */
static __always_inline bool tcp_in_slow_start(const struct tcp_sock *tp)
{
	return tp->snd_cwnd < tp->snd_ssthresh;
}

static __always_inline bool tcp_in_cwnd_reduction(const struct sock *sk)
{
	return (1 << hscc_ca_state(sk)) & ((1 << TCP_CA_CWR) | (1 << TCP_CA_Recovery));
}

static __always_inline __u32 tcp_current_ssthresh(const struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);

	if (tcp_in_cwnd_reduction(sk))
		return tp->snd_ssthresh;
	return max(tp->snd_ssthresh, (tp->snd_cwnd >> 1) + (tp->snd_cwnd >> 2));
}

/* include/net/tcp.h of kernel 6.x: cwnd-limited in the last flight, or in slow start and cwnd
 * below twice the largest flight of the last window */
static __always_inline bool tcp_is_cwnd_limited(const struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);

	if (BPF_CORE_READ_BITFIELD(tp, is_cwnd_limited))
		return true;
	if (tcp_in_slow_start(tp))
		return tp->snd_cwnd < 2 * tp->max_packets_out;
	return false;
}

static __always_inline __u32 tcp_jiffies32(void)
{
	return (__u32)bpf_jiffies64();
}

/* include/linux/jiffies.h _usecs_to_jiffies() when HZ divides 10^6: rounds up */
static __always_inline __u32 usecs_to_jiffies(__u32 us)
{
	return (us + USEC_PER_JIFFY - 1) / USEC_PER_JIFFY;
}

/* floor(sqrt(x)) for a 64-bit x: Newton's iteration y ← (y + x/y)/2 from y = 2^32 ≥ √x, a fixed
 * 48 times with no data-dependent branch (the verifier walks it once): from above the iterates
 * halve until near √x and then converge quadratically, so 48 steps reach ⌊√x⌋ or ⌊√x⌋ + 1 for
 * every 64-bit x; one comparison fixes the latter. (BPF defines x/0 = 0: x = 0 gives 0.) */
static __always_inline __u64 isqrt64(__u64 x)
{
	__u64 y = 1ULL << 32;
	int i;

#pragma unroll
	for (i = 0; i < 48; i++)
		y = (y + x / y) >> 1;
	if (y * y > x)
		y--;
	return y;
}

#define Q16 16
#define ONE_Q16 (1ULL << Q16)

char _license[] SEC("license") = "GPL";

#endif /* HSCC_CC_H */
