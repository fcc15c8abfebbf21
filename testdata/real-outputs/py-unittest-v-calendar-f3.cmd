python3 -m unittest -v test.test_calendar
