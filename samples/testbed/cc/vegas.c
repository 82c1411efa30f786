// SPDX-License-Identifier: GPL-2.0
/*
 * bpf_vegas: TCP Vegas as Linux implements it (net/ipv4/tcp_vegas.c of kernel 6.x), as a BPF
 * struct_ops congestion control. The kernel this testbed runs on is built without tcp_vegas
 * (CONFIG_TCP_CONG_VEGAS is not set), so this program is the Vegas sender of the samples.
 *
 * Source of every rule: L. Brakmo, L. Peterson, "TCP Vegas: End to End Congestion Avoidance on a
 * Global Internet", IEEE JSAC 13(8), 1995, §3.2 (Expected = WindowSize/BaseRTT,
 * Actual = WindowSize/RTT, Diff = Expected − Actual; +1 below α, −1 above β, once per RTT; the
 * slow-start exit when Diff exceeds γ) in the form of Linux tcp_vegas.c, whose departures from the
 * paper its header lists: Diff is counted in packets as cwnd·(RTT − baseRTT)/baseRTT, RTT is the
 * smallest sample of the last round (filters delayed ACKs), slow start grows every RTT (Reno's
 * tcp_slow_start) and ends by setting cwnd to the "actual" rate times baseRTT (+1), and Vegas is
 * off outside the open state (Reno's tcp_reno_cong_avoid runs instead).
 *
 * Fixed point: none beyond the kernel's own. As tcp_vegas.c, diff and target_cwnd are integer
 * divisions (floor), so diff is up to 1 packet below the real backlog cwnd·(RTT − baseRTT)/baseRTT
 * (the comparisons diff > β, diff < α act on that floor), and RTT samples are whole µs (+1 µs so
 * that none is zero). The window stays an integer count of packets.
 *
 * Signals (one hscc_sig line per once-per-round decision, EV_ROUND):
 * hscc-signals: base_rtt_us min_rtt_us cnt_rtt diff target_cwnd adjust snd_cwnd ssthresh
 *   adjust: 0 hold, 1 grow (+1), -1 shrink (−1), 2 left slow start (cwnd = target + 1),
 *           3 too few samples (Reno step), 4 slow start continues
 */
#include "hscc_cc.h"

/* tcp_vegas.c module parameters (the defaults) */
#define VEGAS_ALPHA 2 /* lower bound of packets in network */
#define VEGAS_BETA 4  /* upper bound of packets in network */
#define VEGAS_GAMMA 1 /* limit on increase (slow-start exit) */

struct vegas {
	__u32 beg_snd_nxt; /* right edge during last RTT */
	__u32 cnt_rtt;	   /* # of RTTs measured within last RTT */
	__u32 min_rtt;	   /* min of RTTs measured within last RTT (µs) */
	__u32 base_rtt;	   /* min of all Vegas RTT measurements seen (µs) */
	__u8 doing_vegas_now;
};
_Static_assert(sizeof(struct vegas) <= ICSK_CA_PRIV_BYTES, "vegas state too large");

/* tcp_vegas.c vegas_enable(): start a fresh round at the next send window */
static __always_inline void vegas_enable(struct sock *sk)
{
	struct vegas *v = inet_csk_ca(sk);

	v->doing_vegas_now = 1;
	v->beg_snd_nxt = tcp_sk(sk)->snd_nxt;
	v->cnt_rtt = 0;
	v->min_rtt = 0x7fffffff;
}

SEC("struct_ops")
void BPF_PROG(vegas_init, struct sock *sk)
{
	struct vegas *v = inet_csk_ca(sk);

	v->base_rtt = 0x7fffffff;
	vegas_enable(sk);
	SIG(EV_INIT, "%u", v->base_rtt);
}

/* tcp_vegas_pkts_acked(): min-filter RTT samples within a round (RTT) and forever (baseRTT) */
SEC("struct_ops")
void BPF_PROG(vegas_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct vegas *v = inet_csk_ca(sk);
	__u32 vrtt;

	if (sample->rtt_us < 0)
		return;
	vrtt = sample->rtt_us + 1; /* never allow zero rtt or baseRTT */
	if (vrtt < v->base_rtt)
		v->base_rtt = vrtt;
	v->min_rtt = min(v->min_rtt, vrtt);
	v->cnt_rtt++;
}

/* tcp_vegas_state(): Vegas only in the open state */
SEC("struct_ops")
void BPF_PROG(vegas_state, struct sock *sk, __u8 ca_state)
{
	struct vegas *v = inet_csk_ca(sk);

	if (ca_state == TCP_CA_Open)
		vegas_enable(sk);
	else
		v->doing_vegas_now = 0;
}

/* tcp_vegas_cwnd_event(): restart from idle → fresh samples before deciding */
SEC("struct_ops")
void BPF_PROG(vegas_cwnd_event, struct sock *sk, enum tcp_ca_event event)
{
	struct vegas *v = inet_csk_ca(sk);

	if (event == CA_EVENT_CWND_RESTART || event == CA_EVENT_TX_START) {
		v->base_rtt = 0x7fffffff;
		vegas_enable(sk);
	}
}

/* tcp_vegas_ssthresh() of current kernels */
static __always_inline __u32 vegas_ssthresh(struct tcp_sock *tp)
{
	return min(tp->snd_ssthresh, tp->snd_cwnd);
}

SEC("struct_ops")
void BPF_PROG(vegas_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct vegas *v = inet_csk_ca(sk);

	if (!v->doing_vegas_now) {
		tcp_reno_cong_avoid(sk, ack, acked);
		return;
	}

	if (after(ack, v->beg_snd_nxt)) {
		/* once per RTT (JSAC §3.2: "once per round-trip time") */
		__u32 rtt = v->min_rtt, base = v->base_rtt, cnt = v->cnt_rtt;
		__u32 diff = 0, target = 0;
		__s32 adjust = 3;

		v->beg_snd_nxt = tp->snd_nxt;
		if (cnt <= 2) {
			/* at most 2 samples: likely delayed ACKs only → behave as Reno */
			tcp_reno_cong_avoid(sk, ack, acked);
		} else {
			__u64 t = (__u64)tp->snd_cwnd * base;

			/* target = actual rate × baseRTT = cwnd·baseRTT/RTT (floor) */
			target = t / rtt;
			/* Diff (in packets) = cwnd·(RTT − baseRTT)/baseRTT (floor) */
			diff = tp->snd_cwnd * (rtt - base) / base;

			if (diff > VEGAS_GAMMA && tcp_in_slow_start(tp)) {
				/* going too fast: leave slow start at the actual rate (+1 for the
				 * truncation) */
				tp->snd_cwnd = min(tp->snd_cwnd, target + 1);
				tp->snd_ssthresh = vegas_ssthresh(tp);
				adjust = 2;
			} else if (tcp_in_slow_start(tp)) {
				tcp_slow_start(tp, acked);
				adjust = 4;
			} else if (diff > VEGAS_BETA) {
				tp->snd_cwnd--;
				tp->snd_ssthresh = vegas_ssthresh(tp);
				adjust = -1;
			} else if (diff < VEGAS_ALPHA) {
				tp->snd_cwnd++;
				adjust = 1;
			} else {
				adjust = 0;
			}
			if (tp->snd_cwnd < 2)
				tp->snd_cwnd = 2;
			else if (tp->snd_cwnd > tp->snd_cwnd_clamp)
				tp->snd_cwnd = tp->snd_cwnd_clamp;
			tp->snd_ssthresh = tcp_current_ssthresh(sk);
		}
		SIG(EV_ROUND, "%u %u %u %u %u %d %u %u", base, rtt, cnt, diff, target, adjust, tp->snd_cwnd,
		    tp->snd_ssthresh);
		/* wipe the slate clean for the next RTT */
		v->cnt_rtt = 0;
		v->min_rtt = 0x7fffffff;
	} else if (tcp_in_slow_start(tp)) {
		tcp_slow_start(tp, acked);
	}
}

SEC("struct_ops")
__u32 BPF_PROG(vegas_ssthresh_hook, struct sock *sk)
{
	return tcp_reno_ssthresh(sk);
}

SEC("struct_ops")
__u32 BPF_PROG(vegas_undo_cwnd, struct sock *sk)
{
	return tcp_reno_undo_cwnd(sk);
}

SEC(".struct_ops")
struct tcp_congestion_ops bpf_vegas = {
	.init = (void *)vegas_init,
	.ssthresh = (void *)vegas_ssthresh_hook,
	.undo_cwnd = (void *)vegas_undo_cwnd,
	.cong_avoid = (void *)vegas_cong_avoid,
	.pkts_acked = (void *)vegas_pkts_acked,
	.set_state = (void *)vegas_state,
	.cwnd_event = (void *)vegas_cwnd_event,
	.name = "bpf_vegas",
};
