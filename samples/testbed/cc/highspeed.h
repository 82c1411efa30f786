/* SPDX-License-Identifier: GPL-2.0 */
/*
 * HighSpeed TCP (S. Floyd, RFC 3649, 2003) as Linux implements it (net/ipv4/tcp_highspeed.c of
 * kernel 6.x): shared by highspeed.c (bpf_highspeed) and kyushu_highspeed.c (bpf_ktcp_hs).
 *
 * RFC 3649 §5: above Low_Window = 38 packets the response function is
 *   w = 0.12/p^0.835 (§5 eq.), with a(w) = w²·p(w)·2·b(w)/(2 − b(w)) packets per RTT and
 *   b(w) decreasing log-linearly from 0.5 at Low_Window to High_Decrease = 0.1 at High_Window =
 *   83000; at or below Low_Window: standard TCP, a = 1, b = 0.5 (§5, §6).
 * The kernel (and this port) uses the RFC's Appendix B table instead of the formulas: row i
 * covers windows up to hstcp_aimd_vals[i].cwnd and gives a(w) = i + 1 and b(w) = md/256, so a(w)
 * and b(w) are step functions of w (RFC 3649 Appendix B lists them at exactly these windows; in
 * between the RFC's formula rises smoothly while the table holds the row's value: a(w) is up to
 * 1 packet/RTT low, b(w) up to 0.04 high just below each step).
 *
 * Linux details kept (they are the real sender's behaviour): the row index moves only in
 * congestion avoidance (slow start leaves it where it was); a(w) is added as a per-ACK counter
 * snd_cwnd_cnt += a(w) — per ACK, not per acknowledged packet, so a delayed-ACK receiver halves
 * the growth as it does for the kernel's Reno before byte counting; the decrease is
 * cwnd − ⌊cwnd·md/256⌋ ≥ 2 at the entry of recovery (ssthresh hook).
 *
 * Fixed point: b(w) in 1/256 (Appendix B's two decimals rounded to 1/256: ≤ 0.002); ssthresh =
 * cwnd − ⌊cwnd·md/256⌋ truncates < 1 packet (the kernel's arithmetic, exactly).
 */
#ifndef HSCC_HIGHSPEED_H
#define HSCC_HIGHSPEED_H

#include "hscc_cc.h"

struct hstcp_aimd_val {
	__u32 cwnd;
	__u32 md;
};

/* RFC 3649 Appendix B: window of each row; decrease b(w) · 256 */
static const struct hstcp_aimd_val hstcp_aimd_vals[] = {
	{38, 128}, /*  0.50 */
	{118, 112}, /*  0.44 */
	{221, 104}, /*  0.41 */
	{347, 98}, /*  0.38 */
	{495, 93}, /*  0.37 */
	{663, 89}, /*  0.35 */
	{851, 86}, /*  0.34 */
	{1058, 83}, /*  0.33 */
	{1284, 81}, /*  0.32 */
	{1529, 78}, /*  0.31 */
	{1793, 76}, /*  0.30 */
	{2076, 74}, /*  0.29 */
	{2378, 72}, /*  0.28 */
	{2699, 71}, /*  0.28 */
	{3039, 69}, /*  0.27 */
	{3399, 68}, /*  0.27 */
	{3778, 66}, /*  0.26 */
	{4177, 65}, /*  0.26 */
	{4596, 64}, /*  0.25 */
	{5036, 62}, /*  0.25 */
	{5497, 61}, /*  0.24 */
	{5979, 60}, /*  0.24 */
	{6483, 59}, /*  0.23 */
	{7009, 58}, /*  0.23 */
	{7558, 57}, /*  0.22 */
	{8130, 56}, /*  0.22 */
	{8726, 55}, /*  0.22 */
	{9346, 54}, /*  0.21 */
	{9991, 53}, /*  0.21 */
	{10661, 52}, /*  0.21 */
	{11358, 52}, /*  0.20 */
	{12082, 51}, /*  0.20 */
	{12834, 50}, /*  0.20 */
	{13614, 49}, /*  0.19 */
	{14424, 48}, /*  0.19 */
	{15265, 48}, /*  0.19 */
	{16137, 47}, /*  0.19 */
	{17042, 46}, /*  0.18 */
	{17981, 45}, /*  0.18 */
	{18955, 45}, /*  0.18 */
	{19965, 44}, /*  0.17 */
	{21013, 43}, /*  0.17 */
	{22101, 43}, /*  0.17 */
	{23230, 42}, /*  0.17 */
	{24402, 41}, /*  0.16 */
	{25618, 41}, /*  0.16 */
	{26881, 40}, /*  0.16 */
	{28193, 39}, /*  0.16 */
	{29557, 39}, /*  0.15 */
	{30975, 38}, /*  0.15 */
	{32450, 38}, /*  0.15 */
	{33986, 37}, /*  0.15 */
	{35586, 36}, /*  0.14 */
	{37253, 36}, /*  0.14 */
	{38992, 35}, /*  0.14 */
	{40808, 35}, /*  0.14 */
	{42707, 34}, /*  0.13 */
	{44694, 33}, /*  0.13 */
	{46776, 33}, /*  0.13 */
	{48961, 32}, /*  0.13 */
	{51258, 32}, /*  0.13 */
	{53677, 31}, /*  0.12 */
	{56230, 30}, /*  0.12 */
	{58932, 30}, /*  0.12 */
	{61799, 29}, /*  0.12 */
	{64851, 28}, /*  0.11 */
	{68113, 28}, /*  0.11 */
	{71617, 27}, /*  0.11 */
	{75401, 26}, /*  0.10 */
	{79517, 26}, /*  0.10 */
	{84035, 25}, /*  0.10 */
	{89053, 24}, /*  0.10 */
};

#define HSTCP_AIMD_MAX (sizeof(hstcp_aimd_vals) / sizeof(hstcp_aimd_vals[0]))
#define HSTCP_LOW_WINDOW 38 /* RFC 3649 §5 Low_Window = the first row's window */

/* The table row of window w: the smallest i with w <= hstcp_aimd_vals[i].cwnd (the last row above
 * it). tcp_highspeed.c walks ca->ai up while cwnd > vals[ai].cwnd and down while
 * cwnd <= vals[ai-1].cwnd, which ends on this same row from any start; the scan with constant
 * indices is what the BPF verifier can bound. *md receives the row's decrease (b(w)·256). */
static __always_inline __u32 hstcp_row(__u32 w, __u32 *md)
{
	__u32 i;

	for (i = 0; i < HSTCP_AIMD_MAX; i++) {
		if (w <= hstcp_aimd_vals[i].cwnd || i == HSTCP_AIMD_MAX - 1) {
			*md = hstcp_aimd_vals[i].md;
			return i;
		}
	}
	*md = 128;
	return 0;
}

struct hstcp_state {
	__u32 ai; /* table row: a(w) = ai + 1 */
	__u32 md; /* b(w) · 256 of that row */
};

/* hstcp_cong_avoid(): slow start, or move to the window's table row and add a(w) = row + 1 per
 * ACK to the segment counter (cwnd += a(w)/cwnd) */
static __always_inline void hstcp_cong_avoid(struct sock *sk, struct hstcp_state *ca, __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);

	if (!tcp_is_cwnd_limited(sk))
		return;
	if (tcp_in_slow_start(tp)) {
		tcp_slow_start(tp, acked);
		return;
	}
	/* update AIMD parameters (only here, in congestion avoidance, as the kernel) */
	ca->ai = hstcp_row(tp->snd_cwnd, &ca->md);
	/* additive increase: cwnd = cwnd + a(w)/cwnd, per ACK */
	if (tp->snd_cwnd < tp->snd_cwnd_clamp) {
		tp->snd_cwnd_cnt += ca->ai + 1;
		if (tp->snd_cwnd_cnt >= tp->snd_cwnd) {
			tp->snd_cwnd_cnt -= tp->snd_cwnd;
			tp->snd_cwnd++;
		}
	}
}

static __always_inline void hstcp_init(struct hstcp_state *ca)
{
	ca->ai = 0;
	ca->md = 128;
}

/* hstcp_ssthresh(): multiplicative decrease by b(w) of the current row */
static __always_inline __u32 hstcp_ssthresh(const struct sock *sk, const struct hstcp_state *ca)
{
	const struct tcp_sock *tp = tcp_sk(sk);

	return max(tp->snd_cwnd - ((tp->snd_cwnd * ca->md) >> 8), 2U);
}

#endif /* HSCC_HIGHSPEED_H */
