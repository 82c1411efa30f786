/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The Westwood+ bandwidth estimator of Linux net/ipv4/tcp_westwood.c (kernel 6.x), shared by
 * westwood.c (bpf_westwood) and fusion.c (bpf_fusion: TCP-Fusion's B for W_inc, §II-C "B is the
 * bandwidth estimation achieved by time sequence of ACKed sequence numbers like TCPW-BE").
 *
 * The acknowledged bytes (bk) are summed over a window of max(RTT, 50 ms); then the sample bk/Δt
 * goes through two cascaded low-pass filters with gain 7/8 (an empty filter takes the first sample
 * whole), and the window reopens. Time is in jiffies (HZ = 250 on the reference kernel: 4 ms), as
 * the kernel counts it: Δt is a whole number of jiffies (±1 jiffy on a 13-jiffy window: ±8 % on one
 * sample, averaged down by the filters), the RTT of the window length is rounded up to a jiffy, and
 * B is truncated to whole bytes per jiffy (< 0.02 % at 10 Mbit/s).
 */
#ifndef HSCC_WESTWOOD_H
#define HSCC_WESTWOOD_H

#include "hscc_cc.h"

#define TCP_WESTWOOD_RTT_MIN (HSCC_HZ / 20) /* 50 ms */
#define TCP_WESTWOOD_INIT_RTT (20 * HSCC_HZ) /* maybe too conservative?! (the module's words) */

struct westwood {
	__u32 bw_ns_est; /* first bandwidth estimation, not too smoothed */
	__u32 bw_est;	 /* bandwidth estimate (bytes per jiffy) */
	__u32 rtt_win_sx; /* here starts a new evaluation (jiffies) */
	__u32 bk;	 /* bytes acknowledged in the current window */
	__u32 snd_una;	 /* used for evaluating the number of acked bytes */
	__u32 cumul_ack;
	__u32 accounted;
	__u32 rtt;	 /* last RTT sample (jiffies) */
	__u32 rtt_min;	 /* minimum observed RTT (jiffies) */
	__u8 first_ack;	 /* the first ACK initialises snd_una */
	__u8 reset_rtt_min; /* reset RTTmin to the next RTT sample */
};

static __always_inline void westwood_est_init(struct sock *sk, struct westwood *w)
{
	w->bk = 0;
	w->bw_ns_est = 0;
	w->bw_est = 0;
	w->accounted = 0;
	w->cumul_ack = 0;
	w->reset_rtt_min = 1;
	w->rtt_min = w->rtt = TCP_WESTWOOD_INIT_RTT;
	w->rtt_win_sx = tcp_jiffies32();
	w->snd_una = tcp_sk(sk)->snd_una;
	w->first_ack = 1;
}

/* low-pass filter with constant coefficients: (7a + b)/8 */
static __always_inline __u32 westwood_do_filter(__u32 a, __u32 b)
{
	return ((7 * a) + b) >> 3;
}

static __always_inline void westwood_filter(struct westwood *w, __u32 delta)
{
	/* an empty filter is filled with the first sample */
	if (w->bw_ns_est == 0 && w->bw_est == 0) {
		w->bw_ns_est = w->bk / delta;
		w->bw_est = w->bw_ns_est;
	} else {
		w->bw_ns_est = westwood_do_filter(w->bw_ns_est, w->bk / delta);
		w->bw_est = westwood_do_filter(w->bw_est, w->bw_ns_est);
	}
}

/* tcp_westwood_pkts_acked(): the last RTT sample, in jiffies */
static __always_inline void westwood_est_rtt(struct westwood *w, const struct ack_sample *sample)
{
	if (sample->rtt_us > 0)
		w->rtt = usecs_to_jiffies(sample->rtt_us);
}

/* westwood_update_window(): close the sampling window once max(RTT, 50 ms) has passed; returns
 * the jiffies of the closed window (0 when it stays open); *bk_out = its bytes */
static __always_inline __s32 westwood_update_window(struct sock *sk, struct westwood *w, __u32 *bk_out)
{
	__s32 delta = tcp_jiffies32() - w->rtt_win_sx;

	if (w->first_ack) {
		w->snd_una = tcp_sk(sk)->snd_una;
		w->first_ack = 0;
	}
	if (w->rtt && delta > (__s32)max(w->rtt, (__u32)TCP_WESTWOOD_RTT_MIN)) {
		*bk_out = w->bk;
		westwood_filter(w, delta);
		w->bk = 0;
		w->rtt_win_sx = tcp_jiffies32();
		return delta;
	}
	return 0;
}

static __always_inline void update_rtt_min(struct westwood *w)
{
	if (w->reset_rtt_min) {
		w->rtt_min = w->rtt;
		w->reset_rtt_min = 0;
	} else {
		w->rtt_min = min(w->rtt, w->rtt_min);
	}
}

/* westwood_acked_count(): bytes this (slow-path) ACK accounts for, with delayed/partial ACKs and
 * duplicate ACKs (one MSS each, taken back when the cumulative ACK advances) */
static __always_inline __u32 westwood_acked_count(struct sock *sk, struct westwood *w)
{
	const struct tcp_sock *tp = tcp_sk(sk);

	w->cumul_ack = tp->snd_una - w->snd_una;
	if (!w->cumul_ack) {
		w->accounted += tp->mss_cache;
		w->cumul_ack = tp->mss_cache;
	}
	if (w->cumul_ack > tp->mss_cache) {
		if (w->accounted >= w->cumul_ack) {
			w->accounted -= w->cumul_ack;
			w->cumul_ack = tp->mss_cache;
		} else {
			w->cumul_ack -= w->accounted;
			w->accounted = 0;
		}
	}
	w->snd_una = tp->snd_una;
	return w->cumul_ack;
}

/* tcp_westwood_ack(): account this ACK; returns the closed window's jiffies (0: still open) */
static __always_inline __s32 westwood_est_ack(struct sock *sk, struct westwood *w, __u32 ack_flags, __u32 *bk_out)
{
	__s32 closed;

	if (ack_flags & CA_ACK_SLOWPATH) {
		closed = westwood_update_window(sk, w, bk_out);
		w->bk += westwood_acked_count(sk, w);
		update_rtt_min(w);
		return closed;
	}
	/* fast path (header prediction): snd_una's advance is the acknowledged amount */
	closed = westwood_update_window(sk, w, bk_out);
	w->bk += tcp_sk(sk)->snd_una - w->snd_una;
	w->snd_una = tcp_sk(sk)->snd_una;
	update_rtt_min(w);
	return closed;
}

#endif /* HSCC_WESTWOOD_H */
