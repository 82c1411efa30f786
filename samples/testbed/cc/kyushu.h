/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The Kyushu-TCP (KTCP) add-on: S. Yoshimizu, H. Koga, K. Kouyama, M. Shimamura, K. Kumazoe,
 * M. Tsuru, "Kyushu-TCP: Improving Fairness of High-Speed Transport Protocols", IEICE Trans.
 * Commun. E93-B(5), 2010, §3 (eqs. 1-2, Figs. 2-3) and §4. Wrapped around a base congestion
 * control by kyushu_highspeed.c (HighSpeed TCP, highspeed.h) and kyushu_cubic.c (the kernel's
 * CUBIC through its kfuncs).
 *
 * Rules:
 *   §3 eq. (1)  at a congestion event, w1 = the window just before the drop, w2 = α·w1 with
 *               α = 0.90 (§5.1.1: "the appropriate value of the parameter α is 0.90");
 *   §3 Fig. 3   Tc = the number of fast retransmissions (3 duplicate ACKs, no timeout): +1 at each
 *               congestion event entering recovery; "if KTCP enters the slow-start phase, it
 *               resets Tc" → Tc = 0 at a retransmission timeout;
 *   §3 Fig. 2   after the base's own decrease, the base grows as usual "up to the limit of w2";
 *               the ACK on which it reaches w2 (from below, in congestion avoidance) starts the
 *               non-aggressive period: cwnd is held at w2 and the base's growth is skipped;
 *   §3 eq. (2)  the period ends when "the number of transmitted bytes exceeds a threshold"
 *               B = Tc²·w2 (packets): here the data segments the socket sent since the period
 *               began (tcp_sock.data_segs_out), checked on each ACK; the ACK that finds it
 *               exceeded lets the base grow again; a new drop also ends the period (the base's
 *               decrease, then a new w2) — one period per congestion event;
 *   §4          "KTCP enters the non-aggressive state when HSTCP uses the specialized algorithm":
 *               only when w2 is above the base's low window (38 packets, RFC 3649 Low_Window;
 *               the same 38 for CUBIC, which has no such window: the replay's default
 *               kyushu.engage_above = 38);
 *   Tc = 0 → B = 0: no hold until the next fast retransmission.
 *   undo        a spurious congestion event is undone for KTCP too (w1, w2, Tc as before it).
 *
 * Fixed point: w2 = ⌊9·w1/10⌋ (the kernel's snd_cwnd is whole packets: up to 1 packet below
 * 0.9·w1); B is exact (integers).
 *
 * Signal fields (the including file appends its base's own field):
 *   phase (0 normal, 1 period starts, 2 held, 3 period ends, 4 congestion event, 5 RTO, 6 undo),
 *   w1, w2, Tc, B, sent (segments sent since the period began), snd_cwnd, ssthresh.
 */
#ifndef HSCC_KYUSHU_H
#define HSCC_KYUSHU_H

#include "hscc_cc.h"

#ifndef KTCP_ALPHA_NUM /* a build may choose another α (bpfcc.py VARIANTS: -DKTCP_ALPHA_NUM=N ...) */
#define KTCP_ALPHA_NUM 9 /* α = 9/10 */
#define KTCP_ALPHA_DEN 10
#endif
#define KTCP_ENGAGE_ABOVE 38
#define KTCP_ARMED 1 /* a congestion event has set w2 and no period has run since */
#define KTCP_HOLD 2  /* in the non-aggressive period */

enum { KP_NORMAL = 0, KP_START = 1, KP_HELD = 2, KP_END = 3, KP_EVENT = 4, KP_RTO = 5, KP_UNDO = 6 };

struct ktcp {
	__u32 w1, w2, sent_start;
	__u16 tc;
	__u8 flags, pad;
	__u32 prior_w1, prior_w2; /* before the last congestion event (undo) */
	__u16 prior_tc;
	__u8 prior_flags, pad2;
};

#define KTCP_SIG(ev, phase, k, sent, base)                                                                 \
	SIG(ev, "%u %u %u %u %u %u %u %u %u", (__u32)(phase), (k)->w1, (k)->w2, (__u32)(k)->tc,              \
	    ktcp_b(k), (__u32)(sent), tcp_sk(sk)->snd_cwnd, tcp_sk(sk)->snd_ssthresh, (__u32)(base))

static __always_inline __u32 ktcp_b(const struct ktcp *k)
{
	return (__u32)k->tc * k->tc * k->w2; /* eq. (2): B = Tc²·w2 */
}

static __always_inline void ktcp_init(struct ktcp *k)
{
	k->w1 = k->w2 = k->sent_start = 0;
	k->tc = 0;
	k->flags = 0;
	k->prior_w1 = k->prior_w2 = 0;
	k->prior_tc = 0;
	k->prior_flags = 0;
}

/* at the base's ssthresh hook (a congestion event: recovery, CWR, or an RTO — which the cwnd event
 * below then corrects): eq. (1) and Fig. 3 */
static __always_inline void ktcp_congestion(struct sock *sk, struct ktcp *k)
{
	k->prior_w1 = k->w1;
	k->prior_w2 = k->w2;
	k->prior_tc = k->tc;
	k->prior_flags = k->flags;
	k->w1 = tcp_sk(sk)->snd_cwnd;
	k->w2 = k->w1 * KTCP_ALPHA_NUM / KTCP_ALPHA_DEN;
	k->tc++;
	k->flags = KTCP_ARMED; /* any running period ends */
}

/* CA_EVENT_LOSS (retransmission timeout → slow start): Tc = 0 */
static __always_inline void ktcp_timeout(struct ktcp *k)
{
	k->tc = 0;
	k->flags &= ~KTCP_HOLD;
}

static __always_inline void ktcp_undo(struct ktcp *k)
{
	k->w1 = k->prior_w1;
	k->w2 = k->prior_w2;
	k->tc = k->prior_tc;
	k->flags = k->prior_flags;
}

/* before the base's growth: true = held (skip the base on this ACK); *phase says what happened */
static __always_inline bool ktcp_hold(struct sock *sk, struct ktcp *k, __u32 *phase, __u32 *sent)
{
	struct tcp_sock *tp = tcp_sk(sk);

	*phase = KP_NORMAL;
	*sent = 0;
	if (!(k->flags & KTCP_HOLD))
		return false;
	*sent = tp->data_segs_out - k->sent_start;
	if (*sent > ktcp_b(k)) {
		k->flags &= ~KTCP_HOLD; /* eq. (2): the period is over, the base grows on this ACK */
		*phase = KP_END;
		return false;
	}
	tp->snd_cwnd = k->w2;
	*phase = KP_HELD;
	return true;
}

/* after the base's growth: the ACK that brings the window up to w2 starts the period */
static __always_inline bool ktcp_maybe_start(struct sock *sk, struct ktcp *k, __u32 prev_cwnd, bool was_ca)
{
	struct tcp_sock *tp = tcp_sk(sk);

	if (!(k->flags & KTCP_ARMED) || !was_ca || prev_cwnd >= k->w2 || tp->snd_cwnd < k->w2 ||
	    k->w2 <= KTCP_ENGAGE_ABOVE || ktcp_b(k) == 0)
		return false;
	tp->snd_cwnd = k->w2;
	k->flags = KTCP_HOLD;
	k->sent_start = tp->data_segs_out;
	return true;
}

#endif /* HSCC_KYUSHU_H */
