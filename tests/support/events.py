"""Fake command events and the devices that answer for them, for the ordering of copies
through the host (bbmm.hostorder.HostOrder) without OpenCL."""
from __future__ import annotations


class Event:
    """A command's event that reports its own status as OpenCL's do (0 when complete)
    and counts the host's waits on it."""

    def __init__(self, name):
        self.name, self.waited, self.command_execution_status = name, 0, 1

    def wait(self):
        self.waited += 1

    def __repr__(self):
        return self.name


class Dev:
    """A device of ``domain`` whose events are :class:`Event` s."""

    def __init__(self, domain):
        self.domain = domain

    @staticmethod
    def done(e):
        return e.command_execution_status == 0

    @staticmethod
    def wait(e):
        e.wait()
