"""InOrder: answers pass in their tickets' order, a ticket's many answers as they come."""

from __future__ import annotations

import random
import threading

from modelyard.in_order import InOrder


def test_later_tickets_wait_for_the_earlier_ones_final_answer() -> None:
    order = InOrder()
    out: list[str] = []
    tickets = [order.ticket() for _ in range(3)]
    assert tickets == [0, 1, 2]
    order.release(2, lambda: out.append("c"))  # waits for 0 and 1
    order.release(1, lambda: out.append("b1"), final=False)
    order.release(0, lambda: out.append("a1"), final=False)  # the first ticket's: at once
    assert out == ["a1"]
    order.release(1, lambda: out.append("b2"))  # held: 0 is not final yet
    order.release(0, lambda: out.append("a2"))  # 0 ends: 1's held answers pass, then 2's
    assert out == ["a1", "a2", "b1", "b2", "c"]
    order.release(3, lambda: out.append("d"))  # its turn has come: at once
    assert out[-1] == "d"


def test_a_ticket_whose_answers_are_not_all_in_holds_the_next() -> None:
    order = InOrder()
    out: list[str] = []
    order.release(1, lambda: out.append("b"))
    order.release(0, lambda: out.append("a1"), final=False)
    assert out == ["a1"]
    order.release(0, lambda: out.append("a2"), final=False)  # still ticket 0's turn
    assert out == ["a1", "a2"]
    order.release(0, lambda: out.append("a3"))
    assert out == ["a1", "a2", "a3", "b"]
    # an answer for a ticket whose final one has passed (a model's other thread, late) is
    # not kept: nothing would ever release it
    order.release(0, lambda: out.append("late"), final=False)
    assert out == ["a1", "a2", "a3", "b"] and not order._held


def test_answers_from_many_threads_come_out_in_ticket_order() -> None:
    order = InOrder()
    out: list[tuple[int, int]] = []
    count, answers = 200, 3

    def send(ticket: int) -> None:
        for index in range(answers):
            order.release(
                ticket, lambda i=index: out.append((ticket, i)), final=index == answers - 1
            )

    tickets = list(range(count))
    random.Random(3).shuffle(tickets)
    threads = [threading.Thread(target=send, args=(ticket,)) for ticket in tickets]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert out == [(ticket, index) for ticket in range(count) for index in range(answers)]
