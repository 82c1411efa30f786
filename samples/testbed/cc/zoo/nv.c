// SPDX-License-Identifier: GPL-2.0
/*
 * zoo_nv: TCP-NV ("New Vegas"), ported to a BPF struct_ops congestion control from Linux
 * net/ipv4/tcp_nv.c (kernel 6.x). Part of the open-set zoo (no replay in hscc-trace).
 * Source: L. Brakmo, "TCP-NV: An Update to TCP-Vegas", 2010 (the module's header and comments).
 *
 * Rules as the module (defaults of its parameters):
 *   - every ACK with an RTT sample in Open/Disorder: RTT averaged ½ old + ½ new; rate =
 *     in_flight·80000/avgRTT (units of 100 bit/s per MSS); the round's largest rate kept; min
 *     RTT over a window of ~5 s (chosen in [3.75, 6.25) s at random), replaced at its end;
 *   - once per round: the window the rate needs at the min RTT, cwnd_by_slope = max rate·minRTT
 *     /(80000·MSS), plus nv_pad = 10 packets, is max_win. cwnd > max_win (after ≥ 2 rounds and
 *     ≥ 60 samples, 30 in the first slow start): congestion — growth stops, ssthresh = max_win,
 *     cwnd −= max(2, 30 % of the excess) (or cwnd = max_win when the excess is ≤ 2);
 *     cwnd ≤ max_win − 2 (after ≥ 20 samples): growth allowed again; in between: nothing;
 *   - growth, when allowed: slow start, then Reno's +1 per RTT (cwnd_growth_factor 0; after an
 *     RTO it drops below 0: +1 per 2^k RTTs, back up after 8 uncongested decisions each);
 *   - the minimum decision window nv_min_cwnd (4) grows by 2 when a round saw only one ACK
 *     (TSO/coalescing), up to 80;
 *   - on a loss ssthresh = 0.8·cwnd; growth stops until the next open state resets the round.
 *     Undo as Reno.
 *
 * Departures forced by BPF: the random draw of the reset period is bpf_get_prandom_u32() & 0xff
 * (get_random_bytes() in the module); jiffies from bpf_jiffies64(); no BPF_SOCK_OPS_BASE_RTT
 * program exists here, so, as in the kernel without one, nv_base_rtt = 0 (no RTT bounds).
 *
 * Signals: EV_ROUND at each decision (cwnd changed or growth switched), EV_LOSS at ssthresh:
 * hscc-signals: snd_cwnd ssthresh max_win min_rtt_us rtt_max_rate allow_growth growth_factor eval_cnt
 */
#include "hscc_cc.h"

#define NV_PAD 10
#define NV_PAD_BUFFER 2
#define NV_RESET_PERIOD 5 /* s */
#define NV_MIN_CWND_FLOOR 2
#define NV_CONG_DEC_MULT (30 * 128 / 100)
#define NV_SSTHRESH_FACTOR 8
#define NV_RTT_FACTOR 128
#define NV_LOSS_DEC_FACTOR 819
#define NV_GROWTH_RATE_NEG 8
#define NV_GROWTH_RATE_POS 0
#define NV_DEC_EVAL_MIN_CALLS 60
#define NV_INC_EVAL_MIN_CALLS 20
#define NV_SSTHRESH_EVAL_MIN_CALLS 30
#define NV_STOP_RTT_CNT 10
#define NV_RTT_MIN_CNT 2
#define NV_INIT_RTT 0xffffffffU
#define NV_MIN_CWND 4
#define NV_MIN_CWND_GROW 2
#define NV_TSO_CWND_BOUND 80

struct znv {
	__u64 min_rtt_reset_jiffies;
	__s8 cwnd_growth_factor;
	__u8 allow_cwnd_growth;
	__u8 reset;
	__u8 catchup;
	__u8 eval_call_cnt;
	__u8 min_cwnd;
	__u8 rtt_cnt;
	__u32 last_rtt;
	__u32 min_rtt;
	__u32 min_rtt_new;
	__u32 base_rtt;
	__u32 lower_bound_rtt;
	__u32 rtt_max_rate;
	__u32 rtt_start_seq;
	__u32 last_snd_una;
	__u32 no_cong_cnt;
};
_Static_assert(sizeof(struct znv) <= ICSK_CA_PRIV_BYTES, "nv state too large");

static __always_inline void nv_reset(struct znv *ca, struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);

	ca->reset = 0;
	ca->no_cong_cnt = 0;
	ca->rtt_cnt = 0;
	ca->last_rtt = 0;
	ca->rtt_max_rate = 0;
	ca->rtt_start_seq = tp->snd_una;
	ca->eval_call_cnt = 0;
	ca->last_snd_una = tp->snd_una;
}

SEC("struct_ops")
void BPF_PROG(znv_init, struct sock *sk)
{
	struct znv *ca = inet_csk_ca(sk);

	nv_reset(ca, sk);
	ca->base_rtt = 0; /* no BPF_SOCK_OPS_BASE_RTT program */
	ca->lower_bound_rtt = 0;
	ca->allow_cwnd_growth = 1;
	ca->min_rtt_reset_jiffies = bpf_jiffies64() + 2 * HSCC_HZ;
	ca->min_rtt = NV_INIT_RTT;
	ca->min_rtt_new = NV_INIT_RTT;
	ca->min_cwnd = NV_MIN_CWND;
	ca->catchup = 0;
	ca->cwnd_growth_factor = 0;
	SIG(EV_INIT, "%u", NV_PAD);
}

static __always_inline __u32 nv_bounded_rtt(struct znv *ca, __u32 val)
{
	if (ca->lower_bound_rtt > 0 && val < ca->lower_bound_rtt)
		return ca->lower_bound_rtt;
	if (ca->base_rtt > 0 && val > ca->base_rtt)
		return ca->base_rtt;
	return val;
}

SEC("struct_ops")
void BPF_PROG(znv_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct znv *ca = inet_csk_ca(sk);
	__u32 cnt;

	if (!tcp_is_cwnd_limited(sk))
		return;
	if (!ca->allow_cwnd_growth)
		return;
	if (tcp_in_slow_start(tp)) {
		acked = tcp_slow_start(tp, acked);
		if (!acked)
			return;
	}
	if (ca->cwnd_growth_factor < 0) {
		cnt = tp->snd_cwnd << -ca->cwnd_growth_factor;
		tcp_cong_avoid_ai(tp, cnt, acked);
	} else {
		cnt = max(4U, tp->snd_cwnd >> ca->cwnd_growth_factor);
		tcp_cong_avoid_ai(tp, cnt, acked);
	}
}

SEC("struct_ops")
__u32 BPF_PROG(znv_ssthresh, struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct znv *ca = inet_csk_ca(sk);
	__u32 ss = max((tp->snd_cwnd * NV_LOSS_DEC_FACTOR) >> 10, 2U);

	SIG(EV_LOSS, "%u %u %u %u %u %u %d %u", tp->snd_cwnd, ss, 0, ca->min_rtt, ca->rtt_max_rate,
	    ca->allow_cwnd_growth, ca->cwnd_growth_factor, ca->eval_call_cnt);
	return ss;
}

SEC("struct_ops")
void BPF_PROG(znv_state, struct sock *sk, __u8 new_state)
{
	struct znv *ca = inet_csk_ca(sk);

	if (new_state == TCP_CA_Open && ca->reset) {
		nv_reset(ca, sk);
	} else if (new_state == TCP_CA_Loss || new_state == TCP_CA_CWR || new_state == TCP_CA_Recovery) {
		ca->reset = 1;
		ca->allow_cwnd_growth = 0;
		if (new_state == TCP_CA_Loss) {
			if (ca->cwnd_growth_factor > 0)
				ca->cwnd_growth_factor = 0;
			if (NV_GROWTH_RATE_NEG > 0 && ca->cwnd_growth_factor > -8)
				ca->cwnd_growth_factor--;
		}
	}
}

SEC("struct_ops")
void BPF_PROG(znv_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct znv *ca = inet_csk_ca(sk);
	__u64 now = bpf_jiffies64(), rate64;
	__u32 rate, max_win, cwnd_by_slope, avg_rtt, bytes_acked;
	__u8 st = hscc_ca_state(sk);

	if (sample->rtt_us < 0)
		return;
	if (st != TCP_CA_Open && st != TCP_CA_Disorder)
		return;
	if (ca->catchup && tp->snd_cwnd >= NV_MIN_CWND_FLOOR) {
		ca->catchup = 0;
		ca->allow_cwnd_growth = 0;
	}
	bytes_acked = tp->snd_una - ca->last_snd_una;
	ca->last_snd_una = tp->snd_una;
	if (sample->in_flight == 0)
		return;

	if (ca->last_rtt > 0) {
		avg_rtt = (((__u64)sample->rtt_us) * NV_RTT_FACTOR + ((__u64)ca->last_rtt) * (256 - NV_RTT_FACTOR)) >> 8;
	} else {
		avg_rtt = sample->rtt_us;
		ca->min_rtt = avg_rtt << 1;
	}
	ca->last_rtt = avg_rtt;

	rate64 = ((__u64)sample->in_flight) * 80000; /* 100s of bit/s per MSS */
	rate64 /= (avg_rtt ?: 1);
	rate = (__u32)rate64;
	if (ca->rtt_max_rate < rate)
		ca->rtt_max_rate = rate;
	if (ca->eval_call_cnt < 255)
		ca->eval_call_cnt++;

	avg_rtt = nv_bounded_rtt(ca, avg_rtt);
	if (avg_rtt < ca->min_rtt)
		ca->min_rtt = avg_rtt;
	if (avg_rtt < ca->min_rtt_new)
		ca->min_rtt_new = avg_rtt;

	if ((__s64)(now - ca->min_rtt_reset_jiffies) >= 0) { /* time_after_eq */
		__u32 rnd = bpf_get_prandom_u32() & 0xff;

		ca->min_rtt = ca->min_rtt_new;
		ca->min_rtt_new = NV_INIT_RTT;
		ca->min_rtt_reset_jiffies = now + ((NV_RESET_PERIOD * (384 + rnd) * HSCC_HZ) >> 9);
		ca->min_cwnd = max(ca->min_cwnd / 2, NV_MIN_CWND);
	}

	if (!before(ca->rtt_start_seq, tp->snd_una))
		return;
	/* once per round */
	ca->rtt_start_seq = tp->snd_nxt;
	if (ca->rtt_cnt < 0xff)
		ca->rtt_cnt++;
	if (ca->eval_call_cnt == 1 && bytes_acked >= (ca->min_cwnd - 1) * tp->mss_cache &&
	    ca->min_cwnd < (NV_TSO_CWND_BOUND + 1)) {
		ca->min_cwnd = min(ca->min_cwnd + NV_MIN_CWND_GROW, NV_TSO_CWND_BOUND + 1);
		ca->rtt_start_seq = tp->snd_nxt + ca->min_cwnd * tp->mss_cache;
		ca->eval_call_cnt = 0;
		ca->allow_cwnd_growth = 1;
		return;
	}
	cwnd_by_slope = (__u32)((((__u64)ca->rtt_max_rate) * ca->min_rtt) / (80000ULL * tp->mss_cache));
	max_win = cwnd_by_slope + NV_PAD;

	if (tp->snd_cwnd > max_win) {
		if (ca->rtt_cnt < NV_RTT_MIN_CNT) {
			return;
		} else if (tp->snd_ssthresh == TCP_INFINITE_SSTHRESH) {
			if (ca->eval_call_cnt < NV_SSTHRESH_EVAL_MIN_CALLS)
				return;
		} else if (ca->eval_call_cnt < NV_DEC_EVAL_MIN_CALLS) {
			if (ca->allow_cwnd_growth && ca->rtt_cnt > NV_STOP_RTT_CNT)
				ca->allow_cwnd_growth = 0;
			return;
		}
		/* congested */
		ca->allow_cwnd_growth = 0;
		tp->snd_ssthresh = (NV_SSTHRESH_FACTOR * max_win) >> 3;
		if (tp->snd_cwnd - max_win > 2) {
			__u32 dec = max(2U, ((tp->snd_cwnd - max_win) * NV_CONG_DEC_MULT) >> 7);

			tp->snd_cwnd -= dec;
		} else if (NV_CONG_DEC_MULT > 0) {
			tp->snd_cwnd = max_win;
		}
		if (ca->cwnd_growth_factor > 0)
			ca->cwnd_growth_factor = 0;
		ca->no_cong_cnt = 0;
	} else if (tp->snd_cwnd <= max_win - NV_PAD_BUFFER) {
		if (ca->eval_call_cnt < NV_INC_EVAL_MIN_CALLS)
			return;
		ca->allow_cwnd_growth = 1;
		ca->no_cong_cnt++;
		if (ca->cwnd_growth_factor < 0 && NV_GROWTH_RATE_NEG > 0 && ca->no_cong_cnt > NV_GROWTH_RATE_NEG) {
			ca->cwnd_growth_factor++;
			ca->no_cong_cnt = 0;
		} else if (ca->cwnd_growth_factor >= 0 && NV_GROWTH_RATE_POS > 0 &&
			   ca->no_cong_cnt > NV_GROWTH_RATE_POS) {
			ca->cwnd_growth_factor++;
			ca->no_cong_cnt = 0;
		}
	} else {
		return;
	}
	SIG(EV_ROUND, "%u %u %u %u %u %u %d %u", tp->snd_cwnd, tp->snd_ssthresh, max_win, ca->min_rtt,
	    ca->rtt_max_rate, ca->allow_cwnd_growth, ca->cwnd_growth_factor, ca->eval_call_cnt);
	ca->eval_call_cnt = 0;
	ca->rtt_cnt = 0;
	ca->rtt_max_rate = 0;
	if (tp->snd_cwnd < NV_MIN_CWND_FLOOR)
		tp->snd_cwnd = NV_MIN_CWND_FLOOR;
}

SEC("struct_ops")
__u32 BPF_PROG(znv_undo_cwnd, struct sock *sk)
{
	return tcp_reno_undo_cwnd(sk);
}

SEC(".struct_ops")
struct tcp_congestion_ops zoo_nv = {
	.init = (void *)znv_init,
	.ssthresh = (void *)znv_ssthresh,
	.cong_avoid = (void *)znv_cong_avoid,
	.set_state = (void *)znv_state,
	.undo_cwnd = (void *)znv_undo_cwnd,
	.pkts_acked = (void *)znv_acked,
	.name = "zoo_nv",
};
