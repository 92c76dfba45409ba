import { describe, expect, it } from 'vitest';
import { toDataBr } from '@censo/shared';

describe('toDataBr', () => {
  it.each([
    ['15/03/2014', '15/03/2014'],
    ['5/3/2014', '05/03/2014'],
    ['05/3/2014', '05/03/2014'],
    ['15032014', '15/03/2014'],
    ['2014-03-15', '15/03/2014'],
    ['2014-03-15T00:00:00.000Z', '15/03/2014'],
    // No time-zone conversion: the calendar date before the T.
    ['2014-03-15T23:30:00-03:00', '15/03/2014'],
    ['2014-03-15T02:00:00+05:00', '15/03/2014'],
    [' 15/03/2014 ', '15/03/2014'],
    // Leap days that exist.
    ['29/2/2016', '29/02/2016'],
    ['2000-02-29', '29/02/2000'],
    ['31122014', '31/12/2014'],
  ])('%j → %j', (input, expected) => {
    expect(toDataBr(input)).toBe(expected);
  });

  it.each([
    '',
    'sem data',
    '2014/03/15',
    '15-03-2014',
    '20140315',
    '32/01/2014',
    '15/13/2014',
    '2014-03-15 10:00',
    '1503201',
    ' x ',
    // Shapes of §3.2 that name no day of the calendar: "none of these formats" too.
    '31/02/2014',
    '29/02/2015',
    '30/2/2016',
    '31/04/2014',
    '00/01/2014',
    '2014-02-30',
    '31062014',
    '1900-02-29T00:00:00Z',
  ])('keeps %j as it is', (input) => {
    expect(toDataBr(input)).toBe(input);
  });
});
