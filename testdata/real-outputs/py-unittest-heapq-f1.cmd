python3 -m unittest test.test_heapq
