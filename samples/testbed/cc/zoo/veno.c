// SPDX-License-Identifier: GPL-2.0
/*
 * zoo_veno: TCP Veno, ported to a BPF struct_ops congestion control from Linux
 * net/ipv4/tcp_veno.c (kernel 6.x). Part of the open-set zoo (no replay in hscc-trace).
 * Paper: C. P. Fu, S. C. Liew, "TCP Veno: TCP Enhancement for Transmission over Wireless Access
 * Networks", IEEE JSAC 21(2), 2003.
 *
 * Rules as the module: a Vegas-style backlog estimate N = cwnd − cwnd·baseRTT/RTT (RTT = the
 * smallest sample since the last ACK that ran the rule, baseRTT = smallest ever; Q1 fixed point,
 * as the module) decides the state: N < β = 3 packets "non-congestive" (Reno growth, +1 per
 * RTT; on a loss ssthresh = 4/5·cwnd: a random loss), otherwise "congestive" (+1 every other
 * RTT; on a loss ssthresh = cwnd/2). With two or fewer RTT samples ever, Reno. Outside the open
 * state Reno's cong_avoid runs. Undo as Reno. Without a standing queue N stays below β and Veno
 * grows as Reno but backs off to 0.8·cwnd.
 *
 * Departures forced by BPF: none (the 64-bit division is native in BPF).
 *
 * hscc-signals: snd_cwnd ssthresh diff_q1 base_rtt_us min_rtt_us
 */
#include "hscc_cc.h"

#define VENO_SHIFT 1
#define VENO_BETA (3 << VENO_SHIFT)

struct zveno {
	__u8 doing_veno_now;
	__u16 cntrtt; /* samples seen (never reset, as in the module) */
	__u32 minrtt; /* µs, since the last rule */
	__u32 basertt;
	__u32 inc;    /* congestive state: grow on every other RTT */
	__u32 diff;   /* backlog, Q1 */
	__u32 last_min; /* for the signal only */
};
_Static_assert(sizeof(struct zveno) <= ICSK_CA_PRIV_BYTES, "veno state too large");

static __always_inline void veno_enable(struct zveno *v)
{
	v->doing_veno_now = 1;
	v->minrtt = 0x7fffffff;
}

static __always_inline void veno_init_state(struct zveno *v)
{
	v->basertt = 0x7fffffff;
	v->inc = 1;
	veno_enable(v);
}

SEC("struct_ops")
void BPF_PROG(zveno_init, struct sock *sk)
{
	struct zveno *v = inet_csk_ca(sk);

	v->cntrtt = 0;
	v->diff = 0;
	veno_init_state(v);
	SIG(EV_INIT, "%u", VENO_BETA);
}

SEC("struct_ops")
void BPF_PROG(zveno_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct zveno *v = inet_csk_ca(sk);
	__u32 vrtt;

	if (sample->rtt_us < 0)
		return;
	vrtt = sample->rtt_us + 1; /* never zero */
	if (vrtt < v->basertt)
		v->basertt = vrtt;
	v->minrtt = min(v->minrtt, vrtt);
	v->cntrtt++;
}

SEC("struct_ops")
void BPF_PROG(zveno_state, struct sock *sk, __u8 ca_state)
{
	struct zveno *v = inet_csk_ca(sk);

	if (ca_state == TCP_CA_Open)
		veno_enable(v);
	else
		v->doing_veno_now = 0;
}

SEC("struct_ops")
void BPF_PROG(zveno_cwnd_event, struct sock *sk, enum tcp_ca_event event)
{
	if (event == CA_EVENT_CWND_RESTART || event == CA_EVENT_TX_START)
		veno_init_state(inet_csk_ca(sk));
}

SEC("struct_ops")
void BPF_PROG(zveno_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct zveno *v = inet_csk_ca(sk);

	if (!v->doing_veno_now) {
		tcp_reno_cong_avoid(sk, ack, acked);
		return;
	}
	if (!tcp_is_cwnd_limited(sk))
		return;
	if (v->cntrtt <= 2) {
		tcp_reno_cong_avoid(sk, ack, acked);
	} else {
		__u32 rtt = v->minrtt;
		__u64 target = ((__u64)tp->snd_cwnd * v->basertt) << VENO_SHIFT;

		target /= rtt;
		v->diff = (tp->snd_cwnd << VENO_SHIFT) - (__u32)target;
		v->last_min = rtt;
		if (tcp_in_slow_start(tp)) {
			acked = tcp_slow_start(tp, acked);
			if (!acked)
				goto done;
		}
		if (v->diff < VENO_BETA) {
			tcp_cong_avoid_ai(tp, tp->snd_cwnd, acked); /* non-congestive: every RTT */
		} else if (tp->snd_cwnd_cnt >= tp->snd_cwnd) {	   /* congestive: every other RTT */
			if (v->inc && tp->snd_cwnd < tp->snd_cwnd_clamp) {
				tp->snd_cwnd++;
				v->inc = 0;
			} else {
				v->inc = 1;
			}
			tp->snd_cwnd_cnt = 0;
		} else {
			tp->snd_cwnd_cnt += acked;
		}
done:
		if (tp->snd_cwnd < 2)
			tp->snd_cwnd = 2;
		else if (tp->snd_cwnd > tp->snd_cwnd_clamp)
			tp->snd_cwnd = tp->snd_cwnd_clamp;
	}
	v->minrtt = 0x7fffffff;
}

SEC("struct_ops")
__u32 BPF_PROG(zveno_ssthresh, struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct zveno *v = inet_csk_ca(sk);
	__u32 ss;

	if (v->diff < VENO_BETA)
		ss = max(tp->snd_cwnd * 4 / 5, 2U); /* random loss: cut by 1/5 */
	else
		ss = max(tp->snd_cwnd >> 1U, 2U); /* congestive loss: halve */
	SIG(EV_LOSS, "%u %u %u %u %u", tp->snd_cwnd, ss, v->diff, v->basertt, v->last_min);
	return ss;
}

SEC("struct_ops")
__u32 BPF_PROG(zveno_undo_cwnd, struct sock *sk)
{
	return tcp_reno_undo_cwnd(sk);
}

SEC(".struct_ops")
struct tcp_congestion_ops zoo_veno = {
	.init = (void *)zveno_init,
	.ssthresh = (void *)zveno_ssthresh,
	.undo_cwnd = (void *)zveno_undo_cwnd,
	.cong_avoid = (void *)zveno_cong_avoid,
	.pkts_acked = (void *)zveno_pkts_acked,
	.set_state = (void *)zveno_state,
	.cwnd_event = (void *)zveno_cwnd_event,
	.name = "zoo_veno",
};
