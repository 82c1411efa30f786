// SPDX-License-Identifier: GPL-2.0
/*
 * zoo_yeah: YeAH-TCP, ported to a BPF struct_ops congestion control from Linux
 * net/ipv4/tcp_yeah.c (kernel 6.x), with the Vegas machinery it borrows from
 * net/ipv4/tcp_vegas.c (RTT sampling, rounds, state and restart handling). Part of the open-set
 * zoo (no replay in hscc-trace). Paper: A. Baiocchi, A. P. Castellani, F. Vacirca, "YeAH-TCP: Yet
 * Another Highspeed TCP", PFLDnet 2007.
 *
 * Rules as the module:
 *   - "fast" mode: Scalable TCP's increase (one packet per min(cwnd, 100) ACKs); "slow" mode
 *     (doing_reno_now > 0): Reno's (one per cwnd ACKs). Slow start as Reno.
 *   - once per round (the first ACK beyond the round's snd_nxt, Vegas' rounds), with three or
 *     more RTT samples: queue Q = cwnd·(RTT − baseRTT)/RTT (RTT = smallest sample of the round).
 *     If Q > α = 80 packets or the queueing delay exceeds baseRTT/φ (φ = 8): slow mode, and with
 *     Q > α and cwnd > reno_count the "precautionary decongestion" cwnd −= min(Q/γ, cwnd/2^ε)
 *     (γ = 1, ε = 1), not below reno_count, ssthresh = cwnd; reno_count (Reno's emulated
 *     window) becomes max(cwnd/2, 2) or grows by one. Otherwise fast mode, and after ζ = 50
 *     such rounds reno_count returns to 2.
 *   - on a loss: if the last ρ = 16 rounds were not all slow, the reduction is the last Q,
 *     bounded to [cwnd/8, max(cwnd/2, 2)], else cwnd/2; ssthresh = cwnd − reduction (≥ 2);
 *     reno_count halves (≥ 2).
 *   - Vegas rounds and RTT samples as tcp_vegas.c: samples rtt + 1 µs, off outside the open
 *     state, reset on restart from idle. Undo as Reno.
 *
 * Departures forced by BPF: BPF may not write snd_cwnd_clamp, which the module lowers to
 * 2^32/128 at init for its arithmetic (never reached by these windows).
 *
 * Signals: EV_ROUND at every round with a decision, EV_LOSS at every ssthresh call:
 * hscc-signals: snd_cwnd ssthresh queue doing_reno_now reno_count base_rtt_us min_rtt_us
 */
#include "hscc_cc.h"

#define YEAH_ALPHA 80	/* packets queued at the bottleneck */
#define YEAH_GAMMA 1	/* fraction of the queue removed per round */
#define YEAH_DELTA 3	/* log2 of the smallest fraction of cwnd removed at a loss */
#define YEAH_EPSILON 1	/* log2 of the largest fraction removed by decongestion */
#define YEAH_PHY 8	/* queueing delay limit: baseRTT/8 */
#define YEAH_RHO 16	/* rounds of slow mode that make a loss "competition" */
#define YEAH_ZETA 50	/* fast rounds that reset reno_count */
#define YEAH_SCALABLE_AI_CNT 100U

struct zvegas { /* tcp_vegas.h struct vegas */
	__u32 beg_snd_nxt;
	__u32 beg_snd_una;
	__u32 beg_snd_cwnd;
	__u8 doing_vegas_now;
	__u16 cnt_rtt;
	__u32 min_rtt;
	__u32 base_rtt;
};

struct zyeah {
	struct zvegas vegas;
	__u32 last_q;
	__u32 doing_reno_now;
	__u32 reno_count;
	__u32 fast_count;
};
_Static_assert(sizeof(struct zyeah) <= ICSK_CA_PRIV_BYTES, "yeah state too large");

static __always_inline void zvegas_enable(struct sock *sk, struct zvegas *v)
{
	v->doing_vegas_now = 1;
	v->beg_snd_nxt = tcp_sk(sk)->snd_nxt;
	v->cnt_rtt = 0;
	v->min_rtt = 0x7fffffff;
}

static __always_inline void zvegas_init(struct sock *sk, struct zvegas *v)
{
	v->base_rtt = 0x7fffffff;
	zvegas_enable(sk, v);
}

SEC("struct_ops")
void BPF_PROG(zyeah_init, struct sock *sk)
{
	struct zyeah *y = inet_csk_ca(sk);

	zvegas_init(sk, &y->vegas);
	y->doing_reno_now = 0;
	y->last_q = 0;
	y->reno_count = 2;
	SIG(EV_INIT, "%u", YEAH_ALPHA);
}

SEC("struct_ops")
void BPF_PROG(zyeah_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct zyeah *y = inet_csk_ca(sk);
	__u32 vrtt;

	if (sample->rtt_us < 0)
		return;
	vrtt = sample->rtt_us + 1;
	if (vrtt < y->vegas.base_rtt)
		y->vegas.base_rtt = vrtt;
	y->vegas.min_rtt = min(y->vegas.min_rtt, vrtt);
	y->vegas.cnt_rtt++;
}

SEC("struct_ops")
void BPF_PROG(zyeah_state, struct sock *sk, __u8 ca_state)
{
	struct zyeah *y = inet_csk_ca(sk);

	if (ca_state == TCP_CA_Open)
		zvegas_enable(sk, &y->vegas);
	else
		y->vegas.doing_vegas_now = 0;
}

SEC("struct_ops")
void BPF_PROG(zyeah_cwnd_event, struct sock *sk, enum tcp_ca_event event)
{
	struct zyeah *y = inet_csk_ca(sk);

	if (event == CA_EVENT_CWND_RESTART || event == CA_EVENT_TX_START)
		zvegas_init(sk, &y->vegas);
}

SEC("struct_ops")
void BPF_PROG(zyeah_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct zyeah *y = inet_csk_ca(sk);

	if (!tcp_is_cwnd_limited(sk))
		return;
	if (tcp_in_slow_start(tp)) {
		acked = tcp_slow_start(tp, acked);
		if (!acked)
			goto do_vegas;
	}
	if (!y->doing_reno_now)
		tcp_cong_avoid_ai(tp, min(tp->snd_cwnd, YEAH_SCALABLE_AI_CNT), acked); /* Scalable */
	else
		tcp_cong_avoid_ai(tp, tp->snd_cwnd, acked); /* Reno */
do_vegas:
	if (after(ack, y->vegas.beg_snd_nxt)) {
		if (y->vegas.cnt_rtt > 2) {
			__u32 rtt = y->vegas.min_rtt, base = y->vegas.base_rtt, queue;
			__u64 bw = (__u64)tp->snd_cwnd * (rtt - base);

			bw /= rtt;
			queue = (__u32)bw;
			if (queue > YEAH_ALPHA || rtt - base > (base / YEAH_PHY)) {
				if (queue > YEAH_ALPHA && tp->snd_cwnd > y->reno_count) {
					__u32 reduction = min(queue / YEAH_GAMMA, tp->snd_cwnd >> YEAH_EPSILON);

					tp->snd_cwnd -= reduction;
					tp->snd_cwnd = max(tp->snd_cwnd, y->reno_count);
					tp->snd_ssthresh = tp->snd_cwnd;
				}
				if (y->reno_count <= 2)
					y->reno_count = max(tp->snd_cwnd >> 1, 2U);
				else
					y->reno_count++;
				y->doing_reno_now = min(y->doing_reno_now + 1, 0xffffffU);
			} else {
				y->fast_count++;
				if (y->fast_count > YEAH_ZETA) {
					y->reno_count = 2;
					y->fast_count = 0;
				}
				y->doing_reno_now = 0;
			}
			y->last_q = queue;
			SIG(EV_ROUND, "%u %u %u %u %u %u %u", tp->snd_cwnd, tp->snd_ssthresh, queue, y->doing_reno_now,
			    y->reno_count, base, rtt);
		}
		y->vegas.beg_snd_una = y->vegas.beg_snd_nxt;
		y->vegas.beg_snd_nxt = tp->snd_nxt;
		y->vegas.beg_snd_cwnd = tp->snd_cwnd;
		y->vegas.cnt_rtt = 0;
		y->vegas.min_rtt = 0x7fffffff;
	}
}

SEC("struct_ops")
__u32 BPF_PROG(zyeah_ssthresh, struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct zyeah *y = inet_csk_ca(sk);
	__u32 reduction, ss;

	if (y->doing_reno_now < YEAH_RHO) {
		reduction = y->last_q;
		reduction = min(reduction, max(tp->snd_cwnd >> 1, 2U));
		reduction = max(reduction, tp->snd_cwnd >> YEAH_DELTA);
	} else {
		reduction = max(tp->snd_cwnd >> 1, 2U);
	}
	y->fast_count = 0;
	y->reno_count = max(y->reno_count >> 1, 2U);
	ss = (__s32)(tp->snd_cwnd - reduction) > 2 ? tp->snd_cwnd - reduction : 2;
	SIG(EV_LOSS, "%u %u %u %u %u %u %u", tp->snd_cwnd, ss, y->last_q, y->doing_reno_now, y->reno_count,
	    y->vegas.base_rtt, y->vegas.min_rtt);
	return ss;
}

SEC("struct_ops")
__u32 BPF_PROG(zyeah_undo_cwnd, struct sock *sk)
{
	return tcp_reno_undo_cwnd(sk);
}

SEC(".struct_ops")
struct tcp_congestion_ops zoo_yeah = {
	.init = (void *)zyeah_init,
	.ssthresh = (void *)zyeah_ssthresh,
	.undo_cwnd = (void *)zyeah_undo_cwnd,
	.cong_avoid = (void *)zyeah_cong_avoid,
	.set_state = (void *)zyeah_state,
	.cwnd_event = (void *)zyeah_cwnd_event,
	.pkts_acked = (void *)zyeah_pkts_acked,
	.name = "zoo_yeah",
};
