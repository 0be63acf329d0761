"""Search strategies: which configuration a tuning run measures next.

Every strategy answers the same two calls, ``ask()`` (the next allowed configuration, or None
when it is done) and ``tell(config, objective)`` (what that configuration gave: a number to
minimise, or None for a configuration that failed), so the engine that measures, or replays a
recorded run, never knows which one it drives. tuner.strategies names them and makes them.
"""
